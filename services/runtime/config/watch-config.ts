// Hot reload: watches the appsettings files the configuration was read from and, when one changes
// (written in place or replaced by a rename), loads the configuration again from the same sources.
// Settings declared `reloadable` take their new values; a change to any other is logged as needing
// a restart and the running value stays; a file that no longer loads (bad JSON, a bad value) is
// logged and every running value stays.
import { type FSWatcher, watch } from "node:fs";
import { basename } from "node:path";
import type { Logger } from "pino";
import type { z } from "zod";
import type { LoadedConfig } from "./load-config.js";
import type { SettingsSchema } from "./setting.js";
import { collectLeaves, type SettingLeaf } from "./settings-tree.js";

export interface ConfigWatchOptions {
  /** The configuration the process runs with now. */
  current: LoadedConfig;
  /** Loads the configuration again from the same files, environment and flags (throws ConfigError). */
  load(): LoadedConfig;
  schemas: readonly SettingsSchema[];
  logger: Logger;
  /**
   * Called with the settings to run with (reloadable changes applied, others as they were) and the
   * keys that changed and were applied. Calls never overlap.
   */
  onChange(applied: AppliedSettings, changedKeys: readonly string[]): Promise<void> | void;
  /** Quiet time after the last file event before loading (an editor writes in several steps). Default 100 ms. */
  settleMs?: number;
}

/** Settings by schema, as LoadedConfig.get gives them. */
export interface AppliedSettings {
  get<S extends SettingsSchema>(schema: S): z.output<S>;
}

export interface ConfigWatch {
  stop(): void;
  /** Loads handled since the watch began (each after a file event settled), applied or not. */
  readonly reloads: number;
}

export function watchConfig(options: ConfigWatchOptions): ConfigWatch {
  const log = options.logger.child({ component: "config" });
  const leaves = collectLeaves(options.schemas);
  const watched = new Set(options.current.configFiles.map((file) => basename(file)));
  const settleMs = options.settleMs ?? 100;
  // What runs now, per schema: the last applied values.
  const running = new Map<SettingsSchema, unknown>(options.schemas.map((s) => [s, options.current.get(s)]));
  let timer: NodeJS.Timeout | undefined;
  let busy: Promise<void> = Promise.resolve();
  let stopped = false;
  let reloads = 0;

  const check = async (): Promise<void> => {
    let next: LoadedConfig;
    try {
      next = options.load();
    } catch (err) {
      log.warn({ error: (err as Error).message }, "configuration change not applied: the files do not load; the running values stay");
      return;
    }
    const applied = new Map<SettingsSchema, unknown>();
    const changed: string[] = [];
    const needRestart: string[] = [];
    for (const schema of options.schemas) {
      const before = running.get(schema);
      const after = next.get(schema); // a fresh object of this load: restart-only values are put back into it
      for (const leaf of leaves.filter((l) => l.owner === schema)) {
        if (same(valueAt(before, leaf), valueAt(after, leaf))) continue;
        if (leaf.meta.reloadable) changed.push(leaf.key);
        else {
          needRestart.push(leaf.key);
          setAt(after, leaf, valueAt(before, leaf));
        }
      }
      applied.set(schema, after);
    }
    reloads++;
    if (needRestart.length > 0) {
      log.warn({ settings: needRestart }, `changed settings need a restart and were not applied: ${needRestart.join(", ")}`);
    }
    if (changed.length === 0) return;
    for (const [schema, value] of applied) running.set(schema, value);
    log.info({ settings: changed }, `configuration reloaded: ${changed.join(", ")}`);
    try {
      await options.onChange({ get: (schema) => applied.get(schema) as never }, changed);
    } catch (err) {
      log.error({ err }, "applying the reloaded configuration failed");
    }
  };

  const schedule = (): void => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      busy = busy.then(check);
    }, settleMs);
  };

  // The directory, not the files: a file replaced by a rename is a new inode a file watch would miss.
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(options.current.configDir, { persistent: false }, (_event, file) => {
      if (file === null || watched.has(String(file))) schedule();
    });
    watcher.on("error", (err) => log.warn({ err }, "watching the configuration files failed; changes need a restart"));
  } catch (err) {
    log.warn({ err, dir: options.current.configDir }, "cannot watch the configuration directory; changes need a restart");
  }

  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      watcher?.close();
    },
    get reloads() {
      return reloads;
    },
  };
}

function valueAt(root: unknown, leaf: SettingLeaf): unknown {
  let node = root;
  for (const name of leaf.path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<string, unknown>)[name];
  }
  return node;
}

function setAt(root: unknown, leaf: SettingLeaf, value: unknown): void {
  let node = root as Record<string, unknown>;
  for (const name of leaf.path.slice(0, -1)) node = (node[name] ??= {}) as Record<string, unknown>;
  node[leaf.path.at(-1)!] = value;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
