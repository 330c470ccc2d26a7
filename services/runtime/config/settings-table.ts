// Renders the settings list for people: the README's configuration table and `meshwork --help`.
import { settings } from "./settings.js";

export function environmentForm(key: string): string {
  return key.replaceAll(":", "__");
}

/** The README's configuration table (a test keeps the README in step with it). */
export function renderSettingsMarkdown(): string {
  const rows = settings.map((s) => {
    const env = [environmentForm(s.key), ...(s.aliases ?? [])].map((e) => `\`${e}\``).join(", ");
    const def = s.default === undefined ? "unset" : `\`${s.default}\``;
    return `| \`${s.key}\` | ${env} | ${def} | ${s.description} |`;
  });
  return ["| Setting | Environment | Default | Meaning |", "|---|---|---|---|", ...rows].join("\n");
}

export function renderSettingsText(): string {
  const width = Math.max(...settings.map((s) => s.key.length));
  return settings
    .map((s) => {
      const def = s.default === undefined ? "" : ` (default ${s.default})`;
      return `  ${s.key.padEnd(width)}  ${s.description}${def}`;
    })
    .join("\n");
}
