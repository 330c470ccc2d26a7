// The desktop tools: the clipboard and screenshots (programs found on PATH).
import type { ToolSpec } from "../tool.js";
import { clipboardTools } from "./clipboard.js";
import { screenshotTools } from "./screenshot.js";

export const desktopTools: ToolSpec[] = [...clipboardTools, ...screenshotTools];
