// The git family: git_status, git_diff, git_log, git_commit, git_push, git_pull, git_branch, git_checkout, git_stash.
export { gitTools as gitFamily } from "./git-tools.js";
