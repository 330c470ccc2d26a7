// Reads the leaves out of settings schemas: each leaf's documented key (`Section:Key`), its path in
// the typed object and its metadata. Several schemas (the runtime's and each module's) make up the
// mesh's settings; no two may declare the same key.
import { z } from "zod";
import { type SettingMeta, type SettingsSchema, settingMeta } from "./setting.js";

export interface SettingLeaf {
  /** `Section:Key`, as written in messages, the README and appsettings.json paths. */
  key: string;
  /** Property names in the typed settings object. */
  path: readonly string[];
  meta: SettingMeta;
  /** The schema that declares it (the runtime's or a module's). */
  owner: SettingsSchema;
}

const pascal = (segment: string) => segment.charAt(0).toUpperCase() + segment.slice(1);

export function leavesOf(schema: SettingsSchema): SettingLeaf[] {
  const leaves: SettingLeaf[] = [];
  const walk = (object: z.ZodObject, path: string[]) => {
    for (const [name, child] of Object.entries(object.shape)) {
      const childPath = [...path, name];
      const meta = settingMeta.get(child as z.ZodType);
      if (meta) {
        leaves.push({ key: childPath.map(pascal).join(":"), path: childPath, meta, owner: schema });
      } else if (child instanceof z.ZodObject) {
        walk(child, childPath);
      } else {
        throw new Error(`setting ${childPath.map(pascal).join(":")} is not built with setting.*`);
      }
    }
  };
  walk(schema, []);
  return leaves;
}

/** Every leaf of every schema, in declaration order; a key declared twice is a programming error. */
export function collectLeaves(schemas: readonly SettingsSchema[]): SettingLeaf[] {
  const seen = new Map<string, SettingLeaf>();
  for (const schema of schemas) {
    for (const leaf of leavesOf(schema)) {
      const lower = leaf.key.toLowerCase();
      if (seen.has(lower)) throw new Error(`setting ${leaf.key} is declared twice`);
      seen.set(lower, leaf);
    }
  }
  return [...seen.values()];
}
