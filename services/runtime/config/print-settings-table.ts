// `npm run settings-table`: prints the README's configuration table from the settings list.
import { renderSettingsMarkdown } from "./settings-table.js";

process.stdout.write(`${renderSettingsMarkdown()}\n`);
