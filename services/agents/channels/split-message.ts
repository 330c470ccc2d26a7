// Cuts a reply into parts a platform accepts (Telegram: 4096 characters). The parts joined give
// the text back exactly: nothing is added (no "(1/3)"), nothing trimmed or lost. A cut prefers
// the last newline within the limit, else the last space, else falls at the limit; the newline or
// space stays at the end of the part before the cut. Lengths count UTF-16 code units (what the
// platforms count), and a cut never separates a surrogate pair.

export function splitMessage(text: string, limit: number): string[] {
  if (!Number.isInteger(limit) || limit < 2) throw new RangeError("splitMessage: the limit must be an integer of at least 2");
  const parts: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const window = rest.slice(0, limit);
    let cut = window.lastIndexOf("\n") + 1;
    if (cut <= 0) cut = window.lastIndexOf(" ") + 1;
    if (cut <= 0) {
      cut = limit;
      // A high surrogate last: keep the pair together in the next part.
      const code = rest.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
    }
    parts.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest.length > 0 || parts.length === 0) parts.push(rest);
  return parts;
}
