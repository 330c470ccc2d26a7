// The shell rules: every program a shell line would start is checked against `Tools:Shell:Deny`
// and, when set, `Tools:Shell:Allow`, before anything runs. One hit refuses the whole line with
// PolicyBlock `'<program>' is not allowed`. Programs are found by `parse.ts`; here the words of a
// simple command are read: assignments and reserved words skipped, wrappers (sudo, env, xargs,
// timeout, nice, …) looked through, `sh -c`/`bash -c` scripts and `eval` parsed again, and the
// programs of `find -exec` checked. `echo rm` runs: only programs are checked, never arguments.
import { PolicyBlock } from "../tool.js";
import { type Command, parseLine } from "./parse.js";

export interface ShellRules {
  deny: readonly string[];
  /** Empty: every program not denied may run. */
  allow: readonly string[];
}

const RESERVED = new Set([
  "!",
  "{",
  "}",
  "if",
  "then",
  "else",
  "elif",
  "fi",
  "do",
  "done",
  "while",
  "until",
  "time",
  "function",
  "in",
  "esac",
  "coproc",
]);
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox"]);
/** Wrappers whose first non-option word is a program, with the options taking a value. */
const WRAPPERS: Record<string, { valued: string[]; positional?: number }> = {
  sudo: { valued: ["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "--user", "--group"] },
  doas: { valued: ["-u", "-C"] },
  env: { valued: ["-u", "-C", "--unset", "--chdir"] },
  nice: { valued: ["-n", "--adjustment"] },
  ionice: { valued: ["-c", "-n", "-p"] },
  nohup: { valued: [] },
  timeout: { valued: ["-s", "-k", "--signal", "--kill-after"], positional: 1 },
  xargs: { valued: ["-I", "-n", "-P", "-L", "-s", "-d", "-E", "-a", "--max-args", "--max-procs", "--delimiter", "--arg-file"] },
  exec: { valued: ["-a"] },
  command: { valued: [] },
  builtin: { valued: [] },
  stdbuf: { valued: ["-i", "-o", "-e"] },
  chroot: { valued: [], positional: 1 },
  setsid: { valued: [] },
  time: { valued: ["-f", "-o"] },
  watch: { valued: ["-n", "-d"] },
  strace: { valued: ["-e", "-o", "-p", "-s", "-u"] },
  unbuffer: { valued: [] },
  flock: { valued: ["-w", "-E", "-c"], positional: 1 },
};

/** The rules of `Tools:Shell` from the settings a tool gets. */
export function shellRulesOf(settings: object): ShellRules {
  const shell = ((settings as { shell?: unknown }).shell ?? {}) as { deny?: string[]; allow?: string[] };
  return { deny: shell.deny ?? [], allow: shell.allow ?? [] };
}

/** Every program `line` would start, in order (base names, e.g. `/bin/rm` → `rm`). */
export function programsOf(line: string, depth = 0): string[] {
  if (depth > 8) return [];
  const { commands, substitutions } = parseLine(line);
  const programs: string[] = [];
  for (const command of commands) programs.push(...programsOfCommand(command, depth));
  for (const body of substitutions) programs.push(...programsOf(body, depth + 1));
  return programs;
}

function programsOfCommand(words: Command, depth: number): string[] {
  let i = 0;
  while (i < words.length && (RESERVED.has(words[i] as string) || isAssignment(words[i] as string))) {
    // `for x in a b` and `case x in`: the words up to the separator are not programs.
    i++;
  }
  const first = words[0];
  if (first === "for" || first === "select" || first === "case") return [];
  if (i >= words.length) return [];
  const word = words[i] as string;
  const program = baseName(word);
  const found = [program];
  const rest = words.slice(i + 1);
  if (SHELLS.has(program)) {
    const script = scriptOfShell(rest);
    if (script !== undefined) found.push(...programsOf(script, depth + 1));
  } else if (program === "eval") {
    found.push(...programsOf(rest.join(" "), depth + 1));
  } else if (program === "find") {
    rest.forEach((arg, at) => {
      if (["-exec", "-execdir", "-ok", "-okdir"].includes(arg) && rest[at + 1] !== undefined) {
        found.push(
          ...programsOfCommand(
            rest.slice(at + 1).filter((w) => w !== ";" && w !== "+" && w !== "{}"),
            depth,
          ),
        );
      }
    });
  } else if (Object.hasOwn(WRAPPERS, program)) {
    const wrapper = WRAPPERS[program] as { valued: string[]; positional?: number };
    let at = 0;
    let positional = wrapper.positional ?? 0;
    while (at < rest.length) {
      const arg = rest[at] as string;
      if (arg === "--") {
        at++;
        break;
      }
      if (arg.startsWith("-")) {
        if (program === "env" && (arg === "-S" || arg === "--split-string")) {
          found.push(...programsOf(rest.slice(at + 1).join(" "), depth + 1));
          return found;
        }
        at += wrapper.valued.includes(arg) ? 2 : 1;
      } else if (program === "env" && isAssignment(arg)) at++;
      else if (positional > 0) {
        positional--;
        at++;
      } else break;
    }
    if (at < rest.length) found.push(...programsOfCommand(rest.slice(at), depth));
  }
  return found;
}

/** The script of `sh -c <script>` (options like `-ec` included), or undefined. */
function scriptOfShell(args: string[]): string | undefined {
  for (let at = 0; at < args.length; at++) {
    const arg = args[at] as string;
    if (!arg.startsWith("-") && !arg.startsWith("+")) return undefined;
    if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(arg)) {
      // Options like -o name take a value; the script is the first word that is not an option.
      for (let next = at + 1; next < args.length; next++) {
        const candidate = args[next] as string;
        if (candidate === "-o" || candidate === "+o") {
          next++;
          continue;
        }
        if (!candidate.startsWith("-") && !candidate.startsWith("+")) return candidate;
      }
      return undefined;
    }
    if (arg === "-o" || arg === "+o") at++;
  }
  return undefined;
}

function isAssignment(word: string): boolean {
  return /^[A-Za-z_]\w*(\[[^\]]*\])?\+?=/.test(word);
}

function baseName(word: string): string {
  const slash = word.lastIndexOf("/");
  return slash >= 0 ? word.slice(slash + 1) : word;
}

/** Refuses `line` with PolicyBlock when one of its programs is denied or, with an allow list, not allowed. */
export function checkShellLine(line: string, rules: ShellRules): void {
  if (rules.deny.length === 0 && rules.allow.length === 0) return;
  for (const program of programsOf(line)) {
    const denied = rules.deny.includes(program);
    // A program named by an expansion ($X, $(…)) cannot be checked: refused when rules are set.
    const dynamic = /[$`]/.test(program);
    const notAllowed = rules.allow.length > 0 && !rules.allow.includes(program);
    if (denied || notAllowed || dynamic) throw new PolicyBlock(`'${program}' is not allowed`);
  }
}
