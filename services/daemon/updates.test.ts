// Release checks: semver precedence, the candidates a feed document offers, and
// `app-daemon update --check-only` against a loopback npm registry.
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import test from "ava";
import { parseDaemonArgs, runDaemonCommand } from "./cli.js";
import { compareVersions, feedUrl, latestCandidate } from "./updates.js";

test("semver precedence, pre-releases included", (t) => {
  const ordered = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1",
    "1.1.0-beta.2",
    "1.1.0-beta.10",
    "1.1.0",
    "2.0.0",
  ];
  for (let i = 1; i < ordered.length; i++) {
    t.true(compareVersions(ordered[i - 1]!, ordered[i]!) < 0, `${ordered[i - 1]} < ${ordered[i]}`);
    t.true(compareVersions(ordered[i]!, ordered[i - 1]!) > 0);
  }
  t.is(compareVersions("1.2.3+build.5", "1.2.3"), 0, "build metadata has no precedence");
  t.throws(() => compareVersions("1.2", "1.2.3"), { message: /not a semantic version: 1\.2/ });
});

test("candidates: above the running version, not deprecated, pre-releases only when asked", (t) => {
  const doc = {
    versions: {
      "0.1.0": {},
      "0.2.0": {},
      "0.3.0": { deprecated: "broken" },
      "0.4.0-beta.2": {},
      "0.4.0-beta.10": {},
      "not-a-version": {},
    },
  };
  t.is(latestCandidate(doc, "0.1.0", false), "0.2.0");
  t.is(latestCandidate(doc, "0.1.0", true), "0.4.0-beta.10");
  t.is(latestCandidate(doc, "0.2.0", false), undefined);
  t.throws(() => latestCandidate({ name: "x" }, "0.1.0", false), { message: /no versions/ });
  t.is(feedUrl("https://registry.example/", "@scope/app-daemon"), "https://registry.example/@scope%2fapp-daemon");
});

async function registry(t: import("ava").ExecutionContext, document: unknown) {
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  const server = createServer((req, res) => {
    seen.push({ url: req.url ?? "", headers: req.headers });
    if (req.url !== "/@meshwork%2fapp-daemon") return void res.writeHead(404).end("{}");
    res.writeHead(200, { "content-type": "application/vnd.npm.install-v1+json" }).end(JSON.stringify(document));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, seen };
}

test("update --check-only --json asks the feed (abbreviated metadata, the feed token) and answers one JSON object", async (t) => {
  const feed = await registry(t, { name: "@meshwork/app-daemon", versions: { "0.1.0": {}, "0.2.0": {}, "0.3.0-rc.1": {} } });
  let out = "";
  const flags = [
    "--Updates:PackageId=@meshwork/app-daemon",
    `--Updates:PackageFeedUrl=${feed.url}`,
    "--Updates:FeedToken=feed-secret-token-1",
  ];
  const code = await runDaemonCommand(["update", "--check-only", "--json", ...flags], (text) => {
    out += text;
  });
  t.is(code, 0);
  t.deepEqual(JSON.parse(out), {
    packageId: "@meshwork/app-daemon",
    currentVersion: "0.1.0",
    latestVersion: "0.2.0",
    updateAvailable: true,
  });
  t.regex(String(feed.seen[0]?.headers.accept), /^application\/vnd\.npm\.install-v1\+json/);
  t.is(feed.seen[0]?.headers.authorization, "Bearer feed-secret-token-1");
  out = "";
  await runDaemonCommand(["update", "--check-only", "--json", ...flags, "--Updates:PreRelease=true"], (text) => {
    out += text;
  });
  t.like(JSON.parse(out), { latestVersion: "0.3.0-rc.1", updateAvailable: true });
});

test("update --check-only: an unreachable or invalid feed fails naming its URL, never the token", async (t) => {
  const invalid = await registry(t, { nothing: true });
  const flags = ["--Updates:PackageId=@meshwork/app-daemon", "--Updates:FeedToken=feed-secret-token-1"];
  const invalidError = await t.throwsAsync(() =>
    runDaemonCommand(["update", "--check-only", ...flags, `--Updates:PackageFeedUrl=${invalid.url}`], () => {}),
  );
  t.regex(invalidError?.message ?? "", new RegExp(`${invalid.url}@meshwork%2fapp-daemon answered an invalid document`));
  const unreachable = await t.throwsAsync(() =>
    runDaemonCommand(["update", "--check-only", ...flags, "--Updates:PackageFeedUrl=http://127.0.0.1:9/"], () => {}),
  );
  t.is(
    unreachable?.message,
    "the package feed http://127.0.0.1:9/@meshwork%2fapp-daemon is unreachable or answered something that is not JSON",
  );
  t.notRegex(`${invalidError?.message}${unreachable?.message}`, /feed-secret/);
  t.like(parseDaemonArgs(["update"]), { command: "update", checkOnly: false });
});
