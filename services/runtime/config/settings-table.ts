// Renders settings for people: the README's configuration table and `meshwork --help`.
import type { SettingsSchema } from "./setting.js";
import { collectLeaves } from "./settings-tree.js";

export function environmentForm(key: string): string {
  return key.replaceAll(":", "__");
}

/** The README's configuration table (a test keeps the README in step with it). */
export function renderSettingsMarkdown(schemas: readonly SettingsSchema[]): string {
  const rows = collectLeaves(schemas).map(({ key, meta }) => {
    const env = [environmentForm(key), ...(meta.aliases ?? [])].map((e) => `\`${e}\``).join(", ");
    const def = meta.shownDefault === undefined ? "unset" : `\`${meta.shownDefault}\``;
    return `| \`${key}\` | ${env} | ${def} | ${meta.description}${meta.reloadable ? " Hot-reloaded." : ""} |`;
  });
  return ["| Setting | Environment | Default | Meaning |", "|---|---|---|---|", ...rows].join("\n");
}

export function renderSettingsText(schemas: readonly SettingsSchema[]): string {
  const leaves = collectLeaves(schemas);
  const width = Math.max(...leaves.map((leaf) => leaf.key.length));
  return leaves
    .map(({ key, meta }) => {
      const def = meta.shownDefault === undefined ? "" : ` (default ${meta.shownDefault})`;
      return `  ${key.padEnd(width)}  ${meta.description}${meta.reloadable ? " Hot-reloaded." : ""}${def}`;
    })
    .join("\n");
}
