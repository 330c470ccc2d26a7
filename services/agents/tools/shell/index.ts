// The shell family: run_command, exec, process (the shell rules live in rules.ts).
export { shellTools as shellFamily } from "./shell-tools.js";
