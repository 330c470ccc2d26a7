// A shell line taken apart the way bash would run it, far enough to name every program it starts:
// commands split at `;`, `&`, `&&`, `||`, `|`, `|&`, newlines and subshell parentheses; the bodies
// of `$(…)`, backticks and `<(…)`/`>(…)` (also inside double quotes) parsed again; quotes and
// backslashes removed from words; redirections and their targets, variable assignments, reserved
// words and here-document bodies set aside. `programsOf` then looks through wrappers (sudo, env,
// xargs, timeout, find -exec, …) and parses `sh -c`/`bash -c` scripts and `eval` recursively.

/** One simple command: its words, quotes removed. */
export type Command = string[];

interface Parsed {
  commands: Command[];
  /** Bodies of command substitutions found anywhere, to be parsed on their own. */
  substitutions: string[];
}

const OPERATORS = ["&&", "||", ";;", "|&", ";", "&", "|", "\n", "(", ")"];
const REDIRECT = /^(?:\d+|&)?(?:>>|>&|>\||<<<|<<-|<<|<>|<&|>|<)/;

/** Splits a line into simple commands (their words unquoted) and the substitutions it holds. */
export function parseLine(line: string): Parsed {
  const commands: Command[] = [];
  const substitutions: string[] = [];
  let words: string[] = [];
  let skipNextWord = false;
  const heredocs: string[] = [];
  const endCommand = () => {
    if (words.length > 0) commands.push(words);
    words = [];
  };
  let i = 0;
  while (i < line.length) {
    const c = line[i] as string;
    if (c === " " || c === "\t" || c === "\r") {
      i++;
      continue;
    }
    if (c === "\\" && line[i + 1] === "\n") {
      i += 2;
      continue;
    }
    if (c === "#") {
      while (i < line.length && line[i] !== "\n") i++;
      continue;
    }
    const redirect = REDIRECT.exec(line.slice(i));
    if (redirect) {
      const op = redirect[0];
      i += op.length;
      if (line[i] === "(" && (op === "<" || op === ">")) {
        // Process substitution <(…) / >(…).
        const end = matchParen(line, i + 1);
        substitutions.push(line.slice(i + 1, end));
        i = end + 1;
        continue;
      }
      if (op.endsWith("<<") || op.endsWith("<<-")) {
        const word = readWord(line, i, substitutions);
        heredocs.push(word.text);
        i = word.end;
        continue;
      }
      // The target (a file, or a descriptor after >& and <&) is not a program.
      skipNextWord = true;
      continue;
    }
    const op = OPERATORS.find((o) => line.startsWith(o, i));
    if (op) {
      endCommand();
      i += op.length;
      if (op === "\n" && heredocs.length > 0) i = skipHeredocs(line, i, heredocs.splice(0));
      continue;
    }
    const word = readWord(line, i, substitutions);
    i = word.end;
    if (skipNextWord) {
      skipNextWord = false;
      continue;
    }
    words.push(word.text);
  }
  endCommand();
  return { commands, substitutions };
}

/** Reads one word from `start`: quotes and escapes removed, substitutions collected. */
function readWord(line: string, start: number, substitutions: string[]): { text: string; end: number } {
  let text = "";
  let i = start;
  while (i < line.length) {
    const c = line[i] as string;
    if (" \t\r\n;&|()<>".includes(c)) break;
    if (c === "\\") {
      text += line[i + 1] ?? "";
      i += 2;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      const close = end < 0 ? line.length : end;
      text += line.slice(i + 1, close);
      i = close + 1;
    } else if (c === '"') {
      i++;
      while (i < line.length && line[i] !== '"') {
        if (line[i] === "\\" && i + 1 < line.length) {
          text += line[i + 1];
          i += 2;
        } else if (line[i] === "$" || line[i] === "`") {
          const sub = readSubstitution(line, i, substitutions);
          text += line.slice(i, sub);
          i = sub;
        } else {
          text += line[i];
          i++;
        }
      }
      i++;
    } else if (c === "$" && line[i + 1] === "'") {
      // ANSI-C quoting: $'…' with backslash escapes (\n and the like kept as the letter).
      i += 2;
      while (i < line.length && line[i] !== "'") {
        if (line[i] === "\\") i++;
        text += line[i] ?? "";
        i++;
      }
      i++;
    } else if (c === "$" || c === "`") {
      const end = readSubstitution(line, i, substitutions);
      text += line.slice(i, end);
      i = end;
    } else {
      text += c;
      i++;
    }
  }
  return { text, end: i };
}

/** At `$` or a backtick: records `$(…)` and `` `…` `` bodies; answers the index past the construct. */
function readSubstitution(line: string, i: number, substitutions: string[]): number {
  if (line[i] === "`") {
    let j = i + 1;
    let body = "";
    while (j < line.length && line[j] !== "`") {
      if (line[j] === "\\" && j + 1 < line.length) {
        body += line[j + 1];
        j += 2;
      } else body += line[j++];
    }
    substitutions.push(body);
    return j + 1;
  }
  if (line.startsWith("$((", i)) return matchParen(line, matchParen(line, i + 3) + 1) + 1;
  if (line.startsWith("$(", i)) {
    const end = matchParen(line, i + 2);
    substitutions.push(line.slice(i + 2, end));
    return end + 1;
  }
  if (line.startsWith("${", i)) {
    const end = line.indexOf("}", i);
    return end < 0 ? line.length : end + 1;
  }
  return i + 1;
}

/** The index of the `)` closing a group opened just before `start` (quotes respected). */
function matchParen(line: string, start: number): number {
  let depth = 1;
  let i = start;
  while (i < line.length) {
    const c = line[i];
    if (c === "\\") i += 2;
    else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      i = end < 0 ? line.length : end + 1;
    } else if (c === '"') {
      i++;
      while (i < line.length && line[i] !== '"') i += line[i] === "\\" ? 2 : 1;
      i++;
    } else if (c === "(") {
      depth++;
      i++;
    } else if (c === ")") {
      depth--;
      if (depth === 0) return i;
      i++;
    } else i++;
  }
  return line.length;
}

/** Skips here-document bodies (from the start of the line after `<<`) up to each delimiter line. */
function skipHeredocs(line: string, start: number, delimiters: string[]): number {
  let i = start;
  for (const delimiter of delimiters) {
    for (;;) {
      if (i >= line.length) return line.length;
      const end = line.indexOf("\n", i);
      const text = line.slice(i, end < 0 ? line.length : end);
      i = end < 0 ? line.length : end + 1;
      if (text.replace(/^\t+/, "") === delimiter) break;
    }
  }
  return i;
}
