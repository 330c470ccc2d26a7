// platformHttp on a loopback server: a 429 waited out (Retry-After header, Telegram's
// parameters.retry_after, Discord's retry_after) then retried; a 429 asking too long, or too many,
// gives up as "refused"; a closed port is "unreachable" and no secret appears in any message.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import test from "ava";
import { ChannelPlatformError } from "./channel-adapter.js";
import { platformHttp, retryAfterOf } from "./platform-http.js";

async function serve(
  answers: { status: number; headers?: Record<string, string>; body?: unknown }[],
): Promise<{ url: string; hits: number[]; server: Server }> {
  const hits: number[] = [];
  const server = createServer((_req, res) => {
    hits.push(Date.now());
    const answer = answers.shift() ?? { status: 200, body: { ok: true } };
    res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
    res.end(answer.body === undefined ? "" : JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/botSECRET-TOKEN/getMe`, hits, server };
}

test("retryAfterOf reads Telegram's, Discord's and the header's seconds, else 1", (t) => {
  t.is(retryAfterOf({ parameters: { retry_after: 3 } }, new Headers()), 3);
  t.is(retryAfterOf({ retry_after: 0.5 }, new Headers()), 0.5);
  t.is(retryAfterOf(undefined, new Headers({ "retry-after": "2" })), 2);
  t.is(retryAfterOf({ retry_after: "soon" }, new Headers()), 1);
});

test("a 429 is waited out for its retry_after and the call made again", async (t) => {
  const { url, hits, server } = await serve([{ status: 429, body: { ok: false, error_code: 429, parameters: { retry_after: 1 } } }]);
  t.teardown(() => server.close());
  const waits: number[] = [];
  const http = platformHttp({ secrets: () => ["SECRET-TOKEN"], onRateLimited: (_label, seconds) => waits.push(seconds) });
  const answer = await http({ label: "test getMe", url });
  t.is(answer.status, 200);
  t.deepEqual(answer.body, { ok: true });
  t.deepEqual(waits, [1]);
  t.is(hits.length, 2);
  t.true(hits[1]! - hits[0]! >= 950, "no sooner than retry_after");
});

test("a 429 asking longer than maxWaitSeconds, or one too many, gives up as refused without the token", async (t) => {
  const { url, server } = await serve([
    { status: 429, headers: { "retry-after": "0" } },
    { status: 429, headers: { "retry-after": "0" } },
    { status: 429, headers: { "retry-after": "3600" } },
  ]);
  t.teardown(() => server.close());
  const tooMany = platformHttp({ secrets: () => ["SECRET-TOKEN"], maxRetries: 1 });
  const first = await t.throwsAsync(tooMany({ label: "test getMe", url }), { instanceOf: ChannelPlatformError });
  t.is((first as ChannelPlatformError).kind, "refused");
  const tooLong = platformHttp({ secrets: () => ["SECRET-TOKEN"] });
  const second = await t.throwsAsync(tooLong({ label: "test getMe", url }), { instanceOf: ChannelPlatformError });
  t.regex(second!.message, /3600/);
  for (const error of [first, second]) t.false(error!.message.includes("SECRET-TOKEN"));
});

test("a closed port is unreachable; the message names the call, never the URL or the token", async (t) => {
  const { url, server } = await serve([]);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const http = platformHttp({ secrets: () => ["SECRET-TOKEN"] });
  const error = (await t.throwsAsync(http({ label: "test getMe", url }), { instanceOf: ChannelPlatformError })) as ChannelPlatformError;
  t.is(error.kind, "unreachable");
  t.regex(error.message, /^test getMe: /);
  t.false(error.message.includes("SECRET-TOKEN"));
  t.false(error.message.includes("/bot"));
});
