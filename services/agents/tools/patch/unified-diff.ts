// A unified diff of two texts (three lines of context), as create_patch answers it. Lines are
// diffed as characters (each distinct line mapped to one character) with fast-diff, then grouped
// into hunks. A last line without a newline is marked `\ No newline at end of file`.
import diff from "fast-diff";

interface Line {
  kind: " " | "-" | "+";
  text: string;
  /** The line had no newline at the end of its file. */
  noEol: boolean;
}

const CONTEXT = 3;

export function unifiedDiff(before: string | null, after: string, oldName: string, newName: string): string {
  const lines = diffLines(before ?? "", after);
  if (!lines.some((l) => l.kind !== " ")) return "";
  const out = [`--- ${before === null ? "/dev/null" : oldName}`, `+++ ${newName}`];
  const changed = lines.flatMap((l, i) => (l.kind === " " ? [] : [i]));
  let g = 0;
  while (g < changed.length) {
    let last = g;
    while (last + 1 < changed.length && (changed[last + 1] as number) - (changed[last] as number) <= 2 * CONTEXT) last++;
    const start = Math.max(0, (changed[g] as number) - CONTEXT);
    const end = Math.min(lines.length, (changed[last] as number) + CONTEXT + 1);
    let oldBefore = 0;
    let newBefore = 0;
    for (let i = 0; i < start; i++) {
      if (lines[i]?.kind !== "+") oldBefore++;
      if (lines[i]?.kind !== "-") newBefore++;
    }
    const hunk = lines.slice(start, end);
    const oldCount = hunk.filter((l) => l.kind !== "+").length;
    const newCount = hunk.filter((l) => l.kind !== "-").length;
    out.push(`@@ -${oldBefore + (oldCount > 0 ? 1 : 0)},${oldCount} +${newBefore + (newCount > 0 ? 1 : 0)},${newCount} @@`);
    for (const line of hunk) {
      out.push(`${line.kind}${line.text}`);
      if (line.noEol) out.push("\\ No newline at end of file");
    }
    g = last + 1;
  }
  return `${out.join("\n")}\n`;
}

function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  else lines[lines.length - 1] = `${lines.at(-1)}\u0000noeol`;
  return lines;
}

function diffLines(before: string, after: string): Line[] {
  const codes = new Map<string, string>();
  const table: string[] = [];
  const encode = (lines: string[]) =>
    lines
      .map((line) => {
        let code = codes.get(line);
        if (code === undefined) {
          const n = table.length + 0x100;
          code = String.fromCharCode(n < 0xd800 ? n : n + 0x800);
          codes.set(line, code);
          table.push(line);
        }
        return code;
      })
      .join("");
  const a = splitLines(before);
  const b = splitLines(after);
  if (codes.size + a.length + b.length > 0xf000) {
    // Too many distinct lines for one character each: every line removed, then added.
    return [...a.map((t) => line("-", t)), ...b.map((t) => line("+", t))];
  }
  const parts = diff(encode(a), encode(b));
  const out: Line[] = [];
  for (const [op, chars] of parts) {
    const kind = op === 0 ? " " : op === -1 ? "-" : "+";
    for (const char of chars)
      out.push(line(kind, table[(char.charCodeAt(0) >= 0xe000 ? char.charCodeAt(0) - 0x800 : char.charCodeAt(0)) - 0x100] as string));
  }
  return out;
}

function line(kind: Line["kind"], text: string): Line {
  const noEol = text.endsWith("\u0000noeol");
  return { kind, text: noEol ? text.slice(0, -6) : text, noEol };
}
