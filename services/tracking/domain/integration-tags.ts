// Comma-separated tag lists: a feed's defaultTags merged with an observation's tags for the device
// the feed creates. Pure functions.

/** The entries of a comma-separated list, trimmed, without empty ones. */
export function splitTags(text: string | null | undefined): string[] {
  if (!text) return [];
  return text
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "");
}

/**
 * The lists one after another, each entry once (compared case-insensitively, so "Van" and "van"
 * are one tag; the first spelling is kept), joined by ","; null when nothing is left.
 */
export function mergeTags(...lists: (string | null | undefined)[]): string | null {
  const seen = new Set<string>();
  const merged: string[] = [];
  for (const tag of lists.flatMap(splitTags)) {
    const folded = tag.toLowerCase();
    if (seen.has(folded)) continue;
    seen.add(folded);
    merged.push(tag);
  }
  return merged.length ? merged.join(",") : null;
}
