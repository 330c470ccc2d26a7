// Builders for one setting: a zod schema that accepts the value as any layer gives it (text from a
// variable or flag, JSON from appsettings), checks it, and carries what people need to know of it
// (description, default, secrecy, extra variable names) as zod metadata. A module's settings are a
// z.object tree of these; the key path is the documented name (`orders.retentionDays`
// is `Orders:RetentionDays`).
import { z } from "zod";

/** What the loader, `meshwork --help` and the README table know of a setting beyond its type. */
export interface SettingMeta {
  description: string;
  /** How the type reads in the table and in errors, e.g. "an integer from 1 to 5000". */
  expected: string;
  /** Shown as the default; undefined: unset unless configured. */
  shownDefault?: string;
  /** Never shown: redacted in descriptions, errors and logs. */
  secret?: boolean;
  /** Extra environment variable names accepted besides `Section__Key` (e.g. DATABASE_URL). */
  aliases?: readonly string[];
  /** The records of a list setting: given indexed (`X__0__Field`) or as JSON text. */
  listFields?: readonly ListFieldSpec[];
  /** A relative path is resolved against the working directory by the loader. */
  path?: boolean;
}

/** One field of the records in a list setting (PascalCase, as written in appsettings.json). */
export interface ListFieldSpec {
  name: string;
  required?: boolean;
  secret?: boolean;
  values?: readonly string[];
  minLength?: number;
}

export const settingMeta = z.registry<SettingMeta>();

interface Common<T> {
  description: string;
  default?: T;
  secret?: boolean;
  aliases?: readonly string[];
}

/** A setting with a default always has a value; one without may be unset. */
type Built<S extends z.ZodType, O> = O extends { default: unknown } ? z.ZodDefault<S> : z.ZodOptional<S>;

function finish<S extends z.ZodType, O extends Common<unknown>>(
  inner: S,
  common: O,
  expected: string,
  extra: Partial<SettingMeta> = {},
): Built<S, O> {
  const meta: SettingMeta = {
    description: common.description,
    expected,
    ...(common.default !== undefined ? { shownDefault: String(common.default) } : {}),
    ...(common.secret ? { secret: true } : {}),
    ...(common.aliases ? { aliases: common.aliases } : {}),
    ...extra,
  };
  if (common.default === undefined) {
    const optional = inner.optional();
    settingMeta.add(optional, meta);
    return optional as unknown as Built<S, O>;
  }
  const withDefault = inner.default(common.default as never);
  settingMeta.add(withDefault, meta);
  return withDefault as unknown as Built<S, O>;
}

const text = (expected: string) => z.string({ error: expected }).refine((v) => v !== "", { error: expected });

function parseUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

export const setting = {
  string<O extends Common<string>>(options: O) {
    return finish(text("a non-empty string"), options, "a non-empty string");
  },

  /** A file system path; the loader resolves a relative one against the working directory. */
  path<O extends Common<string>>(options: O) {
    return finish(text("a path"), options, "a path", { path: true });
  },

  int<O extends Common<number> & { min?: number; max?: number }>(options: O) {
    const range = `an integer${options.min !== undefined ? ` from ${options.min}` : ""}${options.max !== undefined ? ` to ${options.max}` : ""}`;
    let inner = z.number({ error: range }).int({ error: range });
    if (options.min !== undefined) inner = inner.min(options.min, { error: range });
    if (options.max !== undefined) inner = inner.max(options.max, { error: range });
    const fromText = z.preprocess((v) => (typeof v === "string" && /^\s*-?\d+\s*$/.test(v) ? Number(v) : v), inner);
    return finish(fromText, options, range);
  },

  port<O extends Common<number>>(options: O) {
    return setting.int({ ...options, min: 0, max: 65535 });
  },

  bool<O extends Common<boolean>>(options: O) {
    const inner = z.preprocess(
      (v) => (typeof v === "string" && /^(true|false)$/i.test(v.trim()) ? v.trim().toLowerCase() === "true" : v),
      z.boolean({ error: "true or false" }),
    );
    return finish(inner, options, "true or false");
  },

  enum<const V extends readonly [string, ...string[]], O extends Common<V[number]>>(values: V, options: O) {
    const expected = `one of ${values.join(", ")}`;
    const inner = z.preprocess((v) => (typeof v === "string" ? v.trim().toLowerCase() : v), z.enum(values, { error: expected }));
    return finish(inner, options, expected);
  },

  /** A URL with one of `protocols`; `list` accepts several, comma-separated. */
  url<O extends Common<string> & { protocols: readonly string[]; list?: boolean }>(options: O) {
    const expected = `${options.list ? "comma-separated URLs" : "a URL"} starting with ${options.protocols.join(" or ")}//`;
    const inner = z.string({ error: expected }).refine(
      (value) => {
        const parts = options.list ? value.split(",").map((v) => v.trim()) : [value];
        return parts.length > 0 && parts.every((part) => options.protocols.includes(parseUrl(part)?.protocol ?? ""));
      },
      { error: expected },
    );
    return finish(inner, options, expected);
  },

  /**
   * A list of records (`[{ "Name": ..., "Key": ... }]`), as a JSON array in appsettings, JSON text
   * in a variable or flag, or one field at a time with an index (`Auth__ApiKeys__0__Key=...`).
   * Field names match case-insensitively; `map` shapes each checked record for the code.
   */
  list<T>(
    options: Omit<Common<never>, "default"> & { fields: readonly ListFieldSpec[]; map: (item: Readonly<Record<string, string>>) => T },
  ) {
    const fields = options.fields;
    const shape = `a JSON array of objects with ${fields.map((f) => f.name).join(", ")}`;
    const inner = z.unknown().transform((value, ctx): T[] => {
      const fail = (detail?: string): never => {
        ctx.addIssue({ code: "custom", message: detail ? `${shape} (${detail})` : shape });
        return z.NEVER;
      };
      let items: unknown = value;
      if (typeof value === "string") {
        try {
          items = JSON.parse(value);
        } catch {
          return fail();
        }
      }
      if (!Array.isArray(items)) return fail();
      return items.map((item: unknown, index) => {
        if (item === null || typeof item !== "object" || Array.isArray(item)) return fail(`item ${index} is not an object`);
        const out: Record<string, string> = {};
        for (const [name, fieldValue] of Object.entries(item)) {
          const field = fields.find((f) => f.name.toLowerCase() === name.toLowerCase());
          if (!field) return fail(`item ${index} has an unknown field ${name}`);
          if (fieldValue === null || fieldValue === undefined) continue;
          if (typeof fieldValue !== "string" && typeof fieldValue !== "number" && typeof fieldValue !== "boolean") {
            return fail(`item ${index}: ${field.name} must be a string`);
          }
          out[field.name] = String(fieldValue);
        }
        for (const field of fields) {
          const given = out[field.name];
          if (given === undefined || given === "") {
            if (field.required) return fail(`item ${index} lacks ${field.name}`);
            delete out[field.name];
            continue;
          }
          if (field.values) {
            if (!field.values.includes(given.toLowerCase()))
              return fail(`item ${index}: ${field.name} must be one of ${field.values.join(", ")}`);
            out[field.name] = given.toLowerCase();
          }
          if (field.minLength !== undefined && given.length < field.minLength) {
            return fail(`item ${index}: ${field.name} must have at least ${field.minLength} characters`);
          }
        }
        return options.map(out);
      });
    });
    const withDefault = inner.default([] as never);
    settingMeta.add(withDefault, {
      description: options.description,
      expected: shape,
      ...(options.secret ? { secret: true } : {}),
      ...(options.aliases ? { aliases: options.aliases } : {}),
      listFields: fields,
    });
    return withDefault;
  },
};

/** A tree of settings: nested z.objects whose leaves were built with `setting.*`. */
export type SettingsSchema = z.ZodObject;
export type SettingsOf<S extends SettingsSchema> = z.output<S>;
