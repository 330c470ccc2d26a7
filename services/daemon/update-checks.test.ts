// The periodic update check against a loopback npm registry: a release is announced once (the
// state file remembers it, across restarts too), a newer one again; NotifyChannels and AutoApply
// follow an announcement; a feed failure is logged with its URL and never the token, and the next
// interval checks again.
import { mkdtemp } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { until } from "../../test/support/until.js";
import type { UpdateAvailable } from "./gateway-link.js";
import { firstCheckDelay, readUpdateState, startUpdateChecks, type UpdateChecksOptions } from "./update-checks.js";
import { checkForUpdate } from "./updates.js";

async function feed(t: import("ava").ExecutionContext) {
  const state = { versions: ["0.1.0", "0.2.0"] as string[], failing: false, requests: 0 };
  const server = createServer((_req, res) => {
    state.requests++;
    if (state.failing) return void res.writeHead(502).end("bad gateway");
    const versions = Object.fromEntries(state.versions.map((v) => [v, {}]));
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ name: "app-daemon", versions }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, state };
}

function checks(t: import("ava").ExecutionContext, url: string, statePath: string, extra: Partial<UpdateChecksOptions> = {}) {
  const announced: UpdateAvailable[] = [];
  const logs: string[] = [];
  const running = startUpdateChecks({
    intervalMs: 1000,
    check: () =>
      checkForUpdate({ feed: url, packageId: "app-daemon", currentVersion: "0.1.0", preRelease: false, token: "feed-token-secret-7" }),
    statePath,
    announce: async (update) => {
      announced.push(update);
    },
    log: (level, message) => logs.push(`${level} ${message}`),
    ...extra,
  });
  t.teardown(() => running.stop());
  return { running, announced, logs };
}

test("a new release is announced once, remembered in update-state.json (a restart does not announce it again); a newer one is", async (t) => {
  const registry = await feed(t);
  const statePath = join(await mkdtemp(join(tmpdir(), "update-checks-")), "app", "update-state.json");
  const notices: string[] = [];
  const applied: string[] = [];
  const first = checks(t, registry.url, statePath, {
    notifyChannels: async (text) => {
      notices.push(text);
    },
    apply: async (update) => {
      applied.push(update.latestVersion);
    },
  });
  await until(() => first.running.checks >= 3, "three checks");
  t.deepEqual(first.announced, [{ currentVersion: "0.1.0", latestVersion: "0.2.0", packageId: "app-daemon" }]);
  t.is(readUpdateState(statePath).announcedVersion, "0.2.0");
  t.deepEqual(notices, ["A new release of app-daemon is available: 0.2.0 (running 0.1.0)."]);
  t.true(applied.length >= 3 && applied.every((v) => v === "0.2.0"), "AutoApply is started by every check that finds the release");
  first.running.stop();

  const restarted = checks(t, registry.url, statePath);
  await until(() => restarted.running.checks >= 2, "two checks after a restart");
  t.deepEqual(restarted.announced, [], "already announced before the restart");
  registry.state.versions.push("0.3.0");
  await until(() => restarted.announced.length === 1, "the newer release announced");
  t.is(restarted.announced[0]?.latestVersion, "0.3.0");
  await until(() => readUpdateState(statePath).announcedVersion === "0.3.0", "0.3.0 remembered");
});

test("a feed failure is logged with the feed's URL and never the token, and the next interval checks again", async (t) => {
  const registry = await feed(t);
  registry.state.failing = true;
  const statePath = join(await mkdtemp(join(tmpdir(), "update-checks-")), "update-state.json");
  const running = checks(t, registry.url, statePath);
  await until(() => running.logs.length >= 2, "two failed checks logged");
  t.regex(
    running.logs[0]!,
    new RegExp(`^warn update check failed, trying again in the next interval: the package feed ${registry.url}app-daemon answered 502`),
  );
  t.false(running.logs.join("\n").includes("feed-token-secret-7"));
  t.deepEqual(running.announced, []);
  registry.state.failing = false;
  await until(() => running.announced.length === 1, "the release announced once the feed answers");
  await until(() => readUpdateState(statePath).announcedVersion === "0.2.0", "0.2.0 remembered");
});

test("an announcement that cannot be recorded is not remembered: the next check tries again", async (t) => {
  const registry = await feed(t);
  const statePath = join(await mkdtemp(join(tmpdir(), "update-checks-")), "update-state.json");
  let attempts = 0;
  const running = checks(t, registry.url, statePath, {
    announce: async () => {
      attempts++;
      if (attempts === 1) throw new Error("the outbox is unavailable");
    },
  });
  await until(() => attempts >= 2, "a second attempt");
  t.regex(running.logs[0]!, /^warn the update event could not be recorded, trying again in the next interval: the outbox is unavailable$/);
  await until(() => readUpdateState(statePath).announcedVersion === "0.2.0", "remembered after the second attempt");
});

test("the first check comes one interval after ready, at most an hour after", (t) => {
  t.is(firstCheckDelay(1000), 1000);
  t.is(firstCheckDelay(15_000), 15_000);
  t.is(firstCheckDelay(24 * 60 * 60 * 1000), 60 * 60 * 1000);
});
