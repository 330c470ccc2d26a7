// The file and search families: read_file, write_file, edit_file, list_directory, grep, glob.
import { fileTools } from "./file-tools.js";
import { searchTools } from "./search-tools.js";

export const filesFamily = [...fileTools, ...searchTools];
