// Hot reload against real files: written in place, replaced by a rename, broken, in the
// environment's own file, under a configuration directory given by flag or variable.
import test, { type ExecutionContext } from "ava";
import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { z } from "zod";
import { until } from "../../../test/support/until.js";
import { type LoadConfigOptions, loadConfig } from "./load-config.js";
import { setting } from "./setting.js";
import { type AppliedSettings, watchConfig } from "./watch-config.js";

const schema = z.object({
  limits: z.object({
    perMinute: setting.int({ description: "Requests per minute.", default: 120, min: 1, reloadable: true }),
    names: setting.list({
      description: "Named limits.",
      fields: [{ name: "Name", required: true }],
      map: (item) => item.Name!,
      reloadable: true,
    }),
  }),
  server: z.object({
    port: setting.port({ description: "Port.", default: 8080 }),
  }),
});

async function configDir(t: ExecutionContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "meshwork-watch-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function logged() {
  const lines: { level: number; msg: string; settings?: string[]; error?: string }[] = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { lines, logger };
}

function watching(t: ExecutionContext, load: Omit<LoadConfigOptions, "schemas">) {
  const options = { ...load, schemas: [schema] };
  const { lines, logger } = logged();
  const changes: { applied: z.output<typeof schema>; keys: readonly string[] }[] = [];
  const watch = watchConfig({
    current: loadConfig(options),
    load: () => loadConfig(options),
    schemas: [schema],
    logger,
    onChange: (applied: AppliedSettings, keys) => void changes.push({ applied: applied.get(schema), keys }),
  });
  t.teardown(() => watch.stop());
  return { watch, changes, lines };
}

test("a reloadable setting written in place applies; the change names the key", async (t) => {
  const dir = await configDir(t);
  await writeFile(join(dir, "appsettings.json"), JSON.stringify({ Limits: { PerMinute: 60 } }));
  const { changes, lines } = watching(t, { cwd: dir, env: {} });
  await writeFile(join(dir, "appsettings.json"), JSON.stringify({ Limits: { PerMinute: 30, Names: [{ Name: "a" }] } }));
  await until(() => changes.length > 0, "the reload");
  t.is(changes[0]!.applied.limits.perMinute, 30);
  t.deepEqual(changes[0]!.applied.limits.names, ["a"]);
  t.deepEqual([...changes[0]!.keys].sort(), ["Limits:Names", "Limits:PerMinute"]);
  t.true(lines.some((l) => l.msg.includes("configuration reloaded") && l.msg.includes("Limits:PerMinute")));
});

test("a file replaced by a rename is seen like one written in place", async (t) => {
  const dir = await configDir(t);
  await writeFile(join(dir, "appsettings.json"), JSON.stringify({ Limits: { PerMinute: 60 } }));
  const { changes } = watching(t, { cwd: dir, env: {} });
  await writeFile(join(dir, "appsettings.json.tmp"), JSON.stringify({ Limits: { PerMinute: 5 } }));
  await rename(join(dir, "appsettings.json.tmp"), join(dir, "appsettings.json"));
  await until(() => changes.length > 0, "the reload after the rename");
  t.is(changes[0]!.applied.limits.perMinute, 5);
  // The watch goes on after the replacement.
  await writeFile(join(dir, "appsettings.json"), JSON.stringify({ Limits: { PerMinute: 6 } }));
  await until(() => changes.length > 1, "the reload after a later write");
  t.is(changes[1]!.applied.limits.perMinute, 6);
});

test("a setting that needs a restart is logged and keeps its running value; the reloadable ones beside it apply", async (t) => {
  const dir = await configDir(t);
  await writeFile(join(dir, "appsettings.json"), JSON.stringify({ Server: { Port: 9000 } }));
  const { changes, lines, watch } = watching(t, { cwd: dir, env: {} });
  await writeFile(join(dir, "appsettings.json"), JSON.stringify({ Server: { Port: 9001 }, Limits: { PerMinute: 7 } }));
  await until(() => changes.length > 0, "the reload");
  t.is(changes[0]!.applied.server.port, 9000);
  t.is(changes[0]!.applied.limits.perMinute, 7);
  t.deepEqual(changes[0]!.keys, ["Limits:PerMinute"]);
  const warning = lines.find((l) => l.msg.includes("need a restart"));
  t.deepEqual(warning?.settings, ["Server:Port"]);

  // Only a restart-only change: nothing is applied, and it is said again.
  const before = watch.reloads;
  await writeFile(join(dir, "appsettings.json"), JSON.stringify({ Server: { Port: 9002 }, Limits: { PerMinute: 7 } }));
  await until(() => watch.reloads > before, "the second load");
  t.is(changes.length, 1);
  t.is(lines.filter((l) => l.msg.includes("need a restart")).length, 2);
});

test("a file that no longer loads is logged and the running values stay; fixing it applies", async (t) => {
  const dir = await configDir(t);
  await writeFile(join(dir, "appsettings.json"), JSON.stringify({ Limits: { PerMinute: 60 } }));
  const { changes, lines } = watching(t, { cwd: dir, env: {} });
  await writeFile(join(dir, "appsettings.json"), "{ not json");
  await until(() => lines.some((l) => l.msg.includes("do not load")), "the warning for bad JSON");
  await writeFile(join(dir, "appsettings.json"), JSON.stringify({ Limits: { PerMinute: 0 } }));
  await until(() => lines.filter((l) => l.msg.includes("do not load")).length === 2, "the warning for a bad value");
  t.regex(lines.filter((l) => l.msg.includes("do not load"))[1]!.error ?? "", /Limits:PerMinute/);
  t.is(changes.length, 0);
  await writeFile(join(dir, "appsettings.json"), JSON.stringify({ Limits: { PerMinute: 61 } }));
  await until(() => changes.length > 0, "the reload once fixed");
  t.is(changes[0]!.applied.limits.perMinute, 61);
});

test("ASPNETCORE_ENVIRONMENT picks the environment's file, read from MESHWORK_CONFIG_DIR, and its changes reload too", async (t) => {
  const dir = await configDir(t);
  const elsewhere = await configDir(t);
  await writeFile(join(dir, "appsettings.json"), JSON.stringify({ Limits: { PerMinute: 60 } }));
  await writeFile(join(dir, "appsettings.Development.json"), JSON.stringify({ Limits: { PerMinute: 50 } }));
  const env = { ASPNETCORE_ENVIRONMENT: "Development", MESHWORK_CONFIG_DIR: dir };
  const loaded = loadConfig({ schemas: [schema], cwd: elsewhere, env });
  t.is(loaded.environment, "Development");
  t.is(loaded.configDir, dir);
  t.is(loaded.get(schema).limits.perMinute, 50);
  t.is(loaded.sources.get("Limits:PerMinute"), "appsettings.Development.json");
  // MESHWORK_ENVIRONMENT wins over ASPNETCORE_ENVIRONMENT, --environment over both; --config-dir over the variable.
  t.is(
    loadConfig({ schemas: [schema], cwd: elsewhere, env: { ...env, MESHWORK_ENVIRONMENT: "Production" } }).get(schema).limits.perMinute,
    60,
  );
  t.is(loadConfig({ schemas: [schema], cwd: dir, env, flags: ["--environment", "Production"] }).get(schema).limits.perMinute, 60);
  t.is(loadConfig({ schemas: [schema], cwd: dir, env, flags: [`--config-dir=${elsewhere}`] }).get(schema).limits.perMinute, 120);

  const { changes } = watching(t, { cwd: elsewhere, env });
  await writeFile(join(dir, "appsettings.Development.json"), JSON.stringify({ Limits: { PerMinute: 40 } }));
  await until(() => changes.length > 0, "the reload of the environment's file");
  t.is(changes[0]!.applied.limits.perMinute, 40);
});
