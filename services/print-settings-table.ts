// `npm run settings-table`: prints the README's configuration table from the settings schemas.
import { settingsMarkdown } from "./mesh-config.js";

process.stdout.write(`${settingsMarkdown()}\n`);
