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
  /**
   * A change in the appsettings files applies to the running process (the module's `reload`);
   * a change to any other setting is logged as needing a restart and not applied.
   */
  reloadable?: boolean;
  /**
   * A map of named entries: the loader gathers `<Key>:<name>:<Field>` (and `<Key>:<name>:<Field>:<i>`
   * for arrays) into `{ name: { Field: value } }`, so entries need no declaration of their own.
   */
  map?: MapSpec;
  /** Command-line flags accepted for this setting besides `--Section:Key` (e.g. `api-key` for `--api-key`). */
  flags?: readonly string[];
  /** A list of plain values: given as a JSON array, JSON text, comma-separated text or indexed (`X__0`). */
  scalarList?: boolean;
}

/** How the loader reads a map setting (`Providers:<name>:BaseUrl`). */
export interface MapSpec {
  /** The entries' fields, as written in appsettings.json (PascalCase). */
  fields: readonly string[];
  /**
   * Environment variables that give a field an entry left unset: `{NAME}` is the entry's name
   * upper-cased with non-alphanumerics as `_` (e.g. `{ ApiKey: "{NAME}_API_KEY" }`).
   */
  envFields?: Readonly<Record<string, string>>;
  /** Fields never shown. */
  secretFields?: readonly string[];
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
  /** Applies without a restart when the appsettings files change (see SettingMeta.reloadable). */
  reloadable?: boolean;
  /** Extra command-line flags (`api-key` for `--api-key`). */
  flags?: readonly string[];
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
    ...(common.reloadable ? { reloadable: true } : {}),
    ...(common.flags ? { flags: common.flags } : {}),
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

/**
 * `[d.]hh:mm:ss[.fffffff]` as .NET writes a TimeSpan, in milliseconds. Hours are not limited to
 * 23: `24:00:00` is a day, as .NET reads it.
 */
export function parseTimeSpan(value: string): number | undefined {
  const match = /^\s*(?:(\d+)\.)?(\d+):([0-5]?\d):([0-5]?\d)(?:\.(\d{1,7}))?\s*$/.exec(value);
  if (!match) return undefined;
  const [, days, hours, minutes, seconds, fraction] = match;
  const ms =
    ((Number(days ?? 0) * 24 + Number(hours)) * 60 + Number(minutes)) * 60_000 +
    Number(seconds) * 1000 +
    (fraction ? Math.round(Number(`0.${fraction}`) * 1000) : 0);
  return Number.isSafeInteger(ms) ? ms : undefined;
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

  /**
   * A time span, `[d.]hh:mm:ss[.fffffff]` (`00:05:00`, `1.00:00:00`; `24:00:00` is a day), read as
   * milliseconds. `min`/`max` bound it (in milliseconds).
   */
  timeSpan<O extends Common<string> & { min?: number; max?: number }>(options: O) {
    const expected = `a time span [d.]hh:mm:ss${options.min !== undefined ? ` of at least ${options.min} ms` : ""}${options.max !== undefined ? ` of at most ${options.max} ms` : ""}`;
    const inner = z.preprocess(
      (v) => (typeof v === "string" ? (parseTimeSpan(v) ?? v) : v),
      z
        .number({ error: expected })
        .int({ error: expected })
        .min(options.min ?? 0, { error: expected })
        .max(options.max ?? Number.MAX_SAFE_INTEGER, { error: expected }),
    );
    const { default: shown, ...rest } = options;
    const parsed = shown === undefined ? undefined : parseTimeSpan(shown);
    if (shown !== undefined && parsed === undefined) throw new Error(`default ${shown} is not a time span`);
    return finish(inner, { ...rest, default: parsed } as Common<number> & { default: number }, expected, {
      ...(shown !== undefined ? { shownDefault: shown } : {}),
    }) as unknown as Built<z.ZodType<number, unknown>, O>;
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
    const inner = z.string({ error: expected }).superRefine((value, ctx) => {
      const parts = options.list ? value.split(",").map((v) => v.trim()) : [value];
      const bad = parts.findIndex((part) => !options.protocols.includes(parseUrl(part)?.protocol ?? ""));
      if (bad === -1) return;
      // In a list, which item is wrong (an empty one too: `a,,b`, a trailing comma).
      // A secret list (NATS URLs with passwords) is not quoted, only counted.
      const quoted = options.secret ? "" : `, '${parts[bad]}',`;
      const which = parts.length > 1 ? ` (item ${bad + 1} of ${parts.length}${quoted} is not one)` : "";
      ctx.addIssue({ code: "custom", message: `${expected}${which}` });
    });
    return finish(inner, options, expected);
  },

  /**
   * Named entries (`Providers:<name>:<Field>`): the loader gathers every key under the setting into
   * `{ name: { Field: value } }` (arrays from JSON, `Field:0`, or text). `parse` checks one entry
   * (fields by their declared spelling, matched case-insensitively) and calls `fail(field, expected)`
   * for a bad one; the error names `<Key>:<name>:<Field>`.
   */
  map<T>(
    options: Omit<Common<never>, "default"> &
      MapSpec & {
        parse: (name: string, fields: Readonly<Record<string, unknown>>, fail: (field: string, expected: string) => never) => T;
      },
  ) {
    const inner = z.unknown().transform((value, ctx): Record<string, T> => {
      if (value === undefined || value === null) return {};
      if (typeof value !== "object" || Array.isArray(value)) {
        ctx.addIssue({ code: "custom", message: `entries as <name>:<Field> keys (${options.fields.join(", ")})` });
        return z.NEVER;
      }
      const out: Record<string, T> = {};
      for (const [name, entry] of Object.entries(value as Record<string, unknown>)) {
        class Failed extends Error {}
        const fail = (field: string, expected: string): never => {
          ctx.addIssue({ code: "custom", path: [name, field], message: expected });
          throw new Failed();
        };
        try {
          if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name)) fail("", "a name of letters, digits, '.', '_' or '-'");
          if (entry === null || typeof entry !== "object" || Array.isArray(entry)) fail("", `fields ${options.fields.join(", ")}`);
          const fields: Record<string, unknown> = {};
          for (const [given, fieldValue] of Object.entries(entry as Record<string, unknown>)) {
            const field = options.fields.find((f) => f.toLowerCase() === given.toLowerCase());
            if (!field) fail(given, `no such field (known: ${options.fields.join(", ")})`);
            if (fieldValue !== null && fieldValue !== undefined && fieldValue !== "") fields[field!] = fieldValue;
          }
          out[name] = options.parse(name, fields, fail);
        } catch (err) {
          if (err instanceof Failed) return z.NEVER;
          throw err;
        }
      }
      return out;
    });
    const withDefault = inner.default({} as never);
    settingMeta.add(withDefault, {
      description: options.description,
      expected: `entries <name>:<Field> with ${options.fields.join(", ")}`,
      map: { fields: options.fields, envFields: options.envFields, secretFields: options.secretFields },
      ...(options.reloadable ? { reloadable: true } : {}),
    });
    return withDefault;
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
      ...(options.reloadable ? { reloadable: true } : {}),
      listFields: fields,
    });
    return withDefault;
  },
};

/**
 * A list of strings (`["10.0.0.0/8", "::1"]`), as a JSON array in appsettings, JSON or
 * comma-separated text in a variable or flag, or one item at a time (`X__0=...`). `check` names
 * what is wrong with an item; unset, the list is empty.
 */
export function stringList(options: { description: string; expected: string; check?: (item: string) => string | undefined }) {
  const shape = `a list of ${options.expected} (a JSON array or comma-separated)`;
  const inner = z.unknown().transform((value, ctx): string[] => {
    let items: unknown = value;
    if (typeof value === "string") {
      const text = value.trim();
      if (text.startsWith("[")) {
        try {
          items = JSON.parse(text);
        } catch {
          ctx.addIssue({ code: "custom", message: shape });
          return z.NEVER;
        }
      } else {
        items = text === "" ? [] : text.split(",");
      }
    }
    if (!Array.isArray(items)) {
      ctx.addIssue({ code: "custom", message: shape });
      return z.NEVER;
    }
    const out: string[] = [];
    for (const [index, item] of items.entries()) {
      if (typeof item !== "string" || item.trim() === "") {
        ctx.addIssue({ code: "custom", message: `${shape} (item ${index} is not a non-empty string)` });
        return z.NEVER;
      }
      const problem = options.check?.(item.trim());
      if (problem) {
        ctx.addIssue({ code: "custom", message: `${shape} (item ${index}: ${problem})` });
        return z.NEVER;
      }
      out.push(item.trim());
    }
    return out;
  });
  const withDefault = inner.default([] as never);
  settingMeta.add(withDefault, { description: options.description, expected: shape, scalarList: true });
  return withDefault;
}

/** A tree of settings: nested z.objects whose leaves were built with `setting.*`. */
export type SettingsSchema = z.ZodObject;
export type SettingsOf<S extends SettingsSchema> = z.output<S>;
