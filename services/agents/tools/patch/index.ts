// The patch family: create_patch, apply_patch, batch_edit_files.
export { patchTools as patchFamily } from "./patch-tools.js";
