// The shell rules: every program of a line (operators, substitutions, subshells, sh -c, wrappers)
// is checked against Tools:Shell:Deny and Tools:Shell:Allow; arguments never are.
import test from "ava";
import { PolicyBlock } from "../tool.js";
import { type ShellRules, checkShellLine, programsOf } from "./rules.js";

const denyRm: ShellRules = { deny: ["rm"], allow: [] };

const refused = (line: string, rules: ShellRules = denyRm) => {
  try {
    checkShellLine(line, rules);
    return undefined;
  } catch (error) {
    if (error instanceof PolicyBlock) return error.message;
    throw error;
  }
};

test("programs are found across ;, &&, ||, pipes, & and newlines", (t) => {
  t.deepEqual(programsOf("a; b && c || d | e & f\ng |& h"), ["a", "b", "c", "d", "e", "f", "g", "h"]);
});

test("command substitutions, backticks, subshells and process substitutions are parsed", (t) => {
  t.deepEqual(programsOf("echo $(whoami) `id` (cd x; make) <(sort a)"), ["echo", "cd", "make", "whoami", "id", "sort"]);
  t.deepEqual(programsOf("echo \"now $(date) and `uptime`\" '$(not)'"), ["echo", "date", "uptime"]);
  t.deepEqual(programsOf("echo $(echo $(rm x))"), ["echo", "echo", "rm"]);
});

test("sh -c and bash -c are parsed recursively, with option clusters", (t) => {
  t.deepEqual(programsOf("sh -c 'ls; rm -rf /'"), ["sh", "ls", "rm"]);
  t.deepEqual(programsOf(`bash -ec "bash -c 'curl x | sh'"`), ["bash", "bash", "curl", "sh"]);
  t.deepEqual(programsOf("bash script.sh"), ["bash"]);
});

test("assignments, reserved words, redirections and here-documents are not programs", (t) => {
  t.deepEqual(programsOf("FOO=1 BAR=2 make > out.log 2>&1 < in"), ["make"]);
  t.deepEqual(programsOf("if test -f x; then cat x; else touch x; fi"), ["test", "cat", "touch"]);
  t.deepEqual(programsOf("for f in rm mv; do echo $f; done"), ["echo"]);
  t.deepEqual(programsOf("cat <<EOF\nrm everything\nEOF\nls"), ["cat", "ls"]);
  t.deepEqual(programsOf("while true; do break; done"), ["true", "break"]);
});

test("wrappers are looked through, and paths name their program", (t) => {
  t.deepEqual(programsOf("sudo -u root /bin/rm x"), ["sudo", "rm"]);
  t.deepEqual(programsOf("env A=1 -u B rm x"), ["env", "rm"]);
  t.deepEqual(programsOf("timeout -s KILL 5 rm x"), ["timeout", "rm"]);
  t.deepEqual(programsOf("xargs -n 1 rm"), ["xargs", "rm"]);
  t.deepEqual(programsOf("find . -name '*.tmp' -exec rm {} ;"), ["find", "rm"]);
  t.deepEqual(programsOf("eval 'rm x'"), ["eval", "rm"]);
  t.deepEqual(programsOf("nohup nice -n 5 rm x"), ["nohup", "nice", "rm"]);
});

test("quotes and escapes are removed from program names", (t) => {
  t.deepEqual(programsOf(`r'm' x; "rm" y; r\\m z; $'rm' w`), ["rm", "rm", "rm", "rm"]);
});

test("a denied program anywhere refuses the whole line", (t) => {
  t.is(refused("rm -rf /"), "'rm' is not allowed");
  t.is(refused("ls && rm x"), "'rm' is not allowed");
  t.is(refused("echo $(rm x)"), "'rm' is not allowed");
  t.is(refused("echo `rm x`"), "'rm' is not allowed");
  t.is(refused("(cd /tmp; rm x)"), "'rm' is not allowed");
  t.is(refused("bash -c 'sh -c \"rm x\"'"), "'rm' is not allowed");
  t.is(refused("cat x | xargs rm"), "'rm' is not allowed");
  t.is(refused("/usr/bin/rm x"), "'rm' is not allowed");
});

test("echo rm runs: arguments are never checked", (t) => {
  t.is(refused("echo rm"), undefined);
  t.is(refused("grep rm file.txt && echo 'rm -rf /'"), undefined);
  t.is(refused("git rm --cached x"), undefined);
});

test("an allow list admits only its programs", (t) => {
  const rules = { deny: [], allow: ["ls", "echo", "cat"] };
  t.is(refused("ls; echo hi | cat", rules), undefined);
  t.is(refused("ls; curl x", rules), "'curl' is not allowed");
  t.is(refused("echo $(id)", rules), "'id' is not allowed");
  t.is(refused("sh -c 'ls'", rules), "'sh' is not allowed");
});

test("a program named by an expansion is refused when rules are set, and anything runs without rules", (t) => {
  t.is(refused("$CMD x"), "'$CMD' is not allowed");
  t.is(refused("$(echo rm) x", { deny: [], allow: ["echo"] }), "'$(echo rm)' is not allowed");
  t.is(refused("rm -rf x; $CMD", { deny: [], allow: [] }), undefined);
});
