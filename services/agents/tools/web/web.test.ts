// web_fetch and its SSRF guard against a loopback HTTP server (loopback allowed only where a test
// says so), and web_search against a loopback fake of the Brave Search API.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import test from "ava";
import { defaultToolsSettings } from "../settings.js";
import { testToolContext, toolNamed } from "../testing.js";
import { PolicyBlock, ToolError, type ToolServices } from "../tool.js";
import { webTools } from "./index.js";
import type { HostResolver } from "./ssrf.js";

const webFetch = toolNamed(webTools, "web_fetch");
const webSearch = toolNamed(webTools, "web_search");

interface Seen {
  url: string;
  headers: IncomingHttpHeaders;
}

async function serve(
  t: { teardown(fn: () => unknown): void },
  routes: Record<string, (port: number) => [number, Record<string, string>, string]>,
) {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    seen.push({ url: req.url ?? "", headers: req.headers });
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const route = routes[path];
    const [status, headers, body] = route ? route(port) : [404, { "content-type": "text/plain" }, "no such page"];
    res.writeHead(status, headers).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port, seen, base: `http://127.0.0.1:${port}` };
}

async function context(web: { allowLoopback?: boolean; allowPrivateNetworks?: boolean } = {}, services: Partial<ToolServices> = {}) {
  const defaults = defaultToolsSettings();
  const ctx = await testToolContext({ settings: { web: { ...defaults.web, ...web } } });
  Object.assign(ctx.services, services);
  return ctx;
}

const page = `<!doctype html><html><head><title>The  Title</title><style>body { color: red }</style>
<script>var secret = "from-script";</script></head>
<body><h1>Hello &amp; welcome</h1><p>First <b>bold</b> paragraph.</p><noscript>enable js</noscript>
<ul><li>one</li><li>two</li></ul><script type="module">alert("x")</script></body></html>`;

test("web_fetch answers HTML as text: no tags, scripts or styles, entities decoded", async (t) => {
  const server = await serve(t, { "/page": () => [200, { "content-type": "text/html; charset=utf-8" }, page] });
  const text = String(await webFetch.run({ url: `${server.base}/page`, maxLength: 5000 }, await context({ allowLoopback: true })));
  t.is(text, "The Title\n\nHello & welcome\nFirst bold paragraph.\none\ntwo");
  for (const leak of ["<", "color: red", "from-script", "alert", "enable js"]) t.false(text.includes(leak), leak);
});

test("web_fetch cuts at maxLength and says where", async (t) => {
  const body = "x".repeat(12_000);
  const server = await serve(t, { "/long": () => [200, { "content-type": "text/plain" }, body] });
  const ctx = await context({ allowLoopback: true });
  t.is(
    await webFetch.run({ url: `${server.base}/long`, maxLength: 5000 }, ctx),
    `${"x".repeat(5000)}\n[truncated at 5000 of 12000 characters]`,
  );
  t.is(await webFetch.run({ url: `${server.base}/long`, maxLength: 20_000 }, ctx), body);
  await t.throwsAsync(webFetch.run({ url: `${server.base}/long`, maxLength: 0 }, ctx), { instanceOf: ToolError });
});

test("web_fetch refuses loopback unless Tools:Web:AllowLoopback, by address and by name, without connecting", async (t) => {
  const server = await serve(t, { "/": () => [200, { "content-type": "text/plain" }, "local"] });
  const ctx = await context({ allowPrivateNetworks: true });
  for (const url of [
    `${server.base}/`,
    `http://localhost:${server.port}/`,
    `http://[::1]:${server.port}/`,
    `http://[::ffff:127.0.0.1]:${server.port}/`,
  ]) {
    await t.throwsAsync(webFetch.run({ url, maxLength: 5000 }, ctx), { instanceOf: PolicyBlock, message: /loopback/ }, url);
  }
  t.is(server.seen.length, 0);
  t.is(await webFetch.run({ url: `http://localhost:${server.port}/`, maxLength: 5000 }, await context({ allowLoopback: true })), "local");
});

test("web_fetch refuses private, link-local and CGNAT addresses unless Tools:Web:AllowPrivateNetworks", async (t) => {
  const ctx = await context({ allowLoopback: true });
  for (const host of ["169.254.169.254", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1", "[fe80::1]", "[fd00::1]"]) {
    await t.throwsAsync(
      webFetch.run({ url: `http://${host}/latest/meta-data`, maxLength: 5000 }, ctx),
      { instanceOf: PolicyBlock, message: /private, link-local or CGNAT/ },
      host,
    );
  }
  await t.throwsAsync(
    webFetch.run({ url: "http://224.0.0.1/", maxLength: 5000 }, await context({ allowLoopback: true, allowPrivateNetworks: true })),
    {
      instanceOf: PolicyBlock,
      message: /not a unicast address/,
    },
  );
});

test("web_fetch takes http(s) only: file:, ftp: and data: are refused; a relative URL is an Error", async (t) => {
  const ctx = await context({ allowLoopback: true, allowPrivateNetworks: true });
  for (const url of ["file:///etc/passwd", "ftp://127.0.0.1/x", "data:text/plain,hi"]) {
    await t.throwsAsync(webFetch.run({ url, maxLength: 5000 }, ctx), { instanceOf: PolicyBlock, message: /only http and https/ }, url);
  }
  await t.throwsAsync(webFetch.run({ url: "/etc/passwd", maxLength: 5000 }, ctx), {
    instanceOf: ToolError,
    message: /not an absolute URL/,
  });
});

test("each redirect is checked again: a redirect to a refused address is refused, others are followed up to 5", async (t) => {
  const server = await serve(t, {
    "/to-metadata": () => [302, { location: "http://169.254.169.254/latest/meta-data/" }, ""],
    "/to-file": () => [302, { location: "file:///etc/passwd" }, ""],
    "/hop": () => [301, { location: "/final" }, ""],
    "/final": () => [200, { "content-type": "text/plain" }, "arrived"],
    "/loop": () => [302, { location: "/loop" }, ""],
  });
  const ctx = await context({ allowLoopback: true });
  await t.throwsAsync(webFetch.run({ url: `${server.base}/to-metadata`, maxLength: 5000 }, ctx), {
    instanceOf: PolicyBlock,
    message: /169\.254\.169\.254 is a private, link-local or CGNAT address/,
  });
  await t.throwsAsync(webFetch.run({ url: `${server.base}/to-file`, maxLength: 5000 }, ctx), { instanceOf: PolicyBlock });
  t.is(await webFetch.run({ url: `${server.base}/hop`, maxLength: 5000 }, ctx), "arrived");
  const before = server.seen.length;
  await t.throwsAsync(webFetch.run({ url: `${server.base}/loop`, maxLength: 5000 }, ctx), {
    instanceOf: ToolError,
    message: /more than 5 redirects/,
  });
  t.is(server.seen.length - before, 6);
});

test("every resolved address is checked, and the connection goes to the checked one (a second DNS answer is never used)", async (t) => {
  const server = await serve(t, { "/": () => [200, { "content-type": "text/plain" }, "pinned"] });
  let calls = 0;
  // First answer loopback (allowed here), any later answer a private address: a second lookup at
  // connect time would go there (and be refused or hang), the pinned connection does not.
  const rebinding: HostResolver = async () =>
    calls++ === 0 ? [{ address: "127.0.0.1", family: 4 }] : [{ address: "10.9.9.9", family: 4 }];
  const ctx = await context({ allowLoopback: true }, { hostResolver: rebinding });
  t.is(await webFetch.run({ url: `http://rebind.test:${server.port}/`, maxLength: 5000 }, ctx), "pinned");
  t.is(calls, 1);
  t.is(server.seen[0]!.headers.host, `rebind.test:${server.port}`);

  const mixed: HostResolver = async () => [
    { address: "127.0.0.1", family: 4 },
    { address: "192.168.0.10", family: 4 },
  ];
  await t.throwsAsync(
    webFetch.run(
      { url: `http://mixed.test:${server.port}/`, maxLength: 5000 },
      await context({ allowLoopback: true }, { hostResolver: mixed }),
    ),
    {
      instanceOf: PolicyBlock,
      message: "mixed.test resolves to 192.168.0.10 is a private, link-local or CGNAT address (Tools:Web:AllowPrivateNetworks is off)",
    },
  );
  t.is(server.seen.length, 1);
});

test("web_fetch answers an Error for an HTTP failure and for a binary body", async (t) => {
  const server = await serve(t, { "/image": () => [200, { "content-type": "image/png" }, "\x89PNG"] });
  const ctx = await context({ allowLoopback: true });
  await t.throwsAsync(webFetch.run({ url: `${server.base}/missing`, maxLength: 5000 }, ctx), {
    instanceOf: ToolError,
    message: /HTTP 404/,
  });
  await t.throwsAsync(webFetch.run({ url: `${server.base}/image`, maxLength: 5000 }, ctx), {
    instanceOf: ToolError,
    message: /image\/png, not text/,
  });
});

async function braveContext(t: { teardown(fn: () => unknown): void }, apiKey: string | undefined) {
  const brave = await serve(t, {
    "/res/v1/web/search": () => [
      200,
      { "content-type": "application/json" },
      JSON.stringify({
        type: "search",
        web: {
          results: Array.from({ length: 12 }, (_, i) => ({
            title: `Result <strong>${i}</strong>`,
            url: `https://example.test/${i}`,
            description: `About <strong>mesh</strong> &amp; more ${i}`,
            age: "1 day",
          })),
        },
      }),
    ],
  });
  const ctx = await testToolContext({ settings: { webSearch: { baseUrl: brave.base, apiKey } } });
  return { brave, ctx };
}

test("web_search calls the Brave API with the key and answers [{ title, url, snippet }]", async (t) => {
  const { brave, ctx } = await braveContext(t, "brave-test-key");
  const results = (await webSearch.run({ query: "service mesh", count: 3 }, ctx)) as unknown[];
  t.deepEqual(
    results,
    [0, 1, 2].map((i) => ({ title: `Result ${i}`, url: `https://example.test/${i}`, snippet: `About mesh & more ${i}` })),
  );
  const asked = new URL(brave.seen[0]!.url, "http://x");
  t.is(asked.pathname, "/res/v1/web/search");
  t.is(asked.searchParams.get("q"), "service mesh");
  t.is(asked.searchParams.get("count"), "3");
  t.is(brave.seen[0]!.headers["x-subscription-token"], "brave-test-key");
});

test("web_search clamps count to 1–10", async (t) => {
  const { brave, ctx } = await braveContext(t, "k");
  t.is(((await webSearch.run({ query: "a", count: 50 }, ctx)) as unknown[]).length, 10);
  t.is(((await webSearch.run({ query: "a", count: 0 }, ctx)) as unknown[]).length, 1);
  t.deepEqual(
    brave.seen.map((s) => new URL(s.url, "http://x").searchParams.get("count")),
    ["10", "1"],
  );
});

test("web_search without a key is an Error naming Tools:WebSearch:ApiKey, and calls nothing", async (t) => {
  const { brave, ctx } = await braveContext(t, undefined);
  await t.throwsAsync(webSearch.run({ query: "a", count: 5 }, ctx), { instanceOf: ToolError, message: /Tools:WebSearch:ApiKey/ });
  t.is(brave.seen.length, 0);
});

test("web_search answers an Error when the API refuses the key, without the key in it", async (t) => {
  const refusing = await serve(t, { "/res/v1/web/search": () => [401, { "content-type": "application/json" }, '{"error":"bad token"}'] });
  const ctx = await testToolContext({ settings: { webSearch: { baseUrl: refusing.base, apiKey: "wrong-key-123" } } });
  const error = await t.throwsAsync(webSearch.run({ query: "a", count: 5 }, ctx), { instanceOf: ToolError, message: /HTTP 401/ });
  t.false(error!.message.includes("wrong-key-123"));
});
