// The notebook family: notebook_open, notebook_run_cell, notebook_run_all, notebook_get_vars, notebook_export.
export { notebookTools as notebookFamily } from "./notebook-tools.js";
