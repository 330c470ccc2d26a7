// The code family: execute_code, run_python, run_node, run_bash.
export { codeTools as codeFamily } from "./code-tools.js";
