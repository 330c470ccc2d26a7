// Which answers deliver, which are retried and which fail for good.
import test from "ava";
import { judgeAnswer, judgeError } from "./judge-attempt.js";
import { RefusedDestination } from "./ssrf-guard.js";

test("2xx delivers", (t) => {
  for (const status of [200, 201, 202, 204, 299]) t.deepEqual(judgeAnswer(status, undefined, 0), { kind: "delivered" });
});

test("429 and 5xx are retried, with Retry-After when given", (t) => {
  for (const status of [429, 500, 502, 503, 504, 599]) t.is(judgeAnswer(status, undefined, 0).kind, "retry", String(status));
  t.deepEqual(judgeAnswer(429, "3", 0), { kind: "retry", error: "HTTP 429", retryAfterMs: 3000 });
  t.deepEqual(judgeAnswer(503, "nonsense", 0), { kind: "retry", error: "HTTP 503" });
});

test("410 fails and disables the endpoint; other 4xx and 3xx fail for good", (t) => {
  t.like(judgeAnswer(410, undefined, 0), { kind: "failed", disableEndpoint: true });
  for (const status of [400, 401, 403, 404, 408, 413, 422, 301, 302, 307]) {
    const verdict = judgeAnswer(status, "1", 0);
    t.is(verdict.kind, "failed", String(status));
    t.false("disableEndpoint" in verdict && verdict.disableEndpoint === true, String(status));
  }
});

test("a refused destination fails for good; timeouts and network errors are retried", (t) => {
  t.like(judgeError(new RefusedDestination("destination refused: x"), 10), { kind: "failed", error: "destination refused: x" });
  t.like(judgeError(new DOMException("timeout", "TimeoutError"), 10), { kind: "retry", error: "timed out after 10 s" });
  const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" });
  t.like(judgeError(refused, 10), { kind: "retry", error: "network error (ECONNREFUSED)" });
  const unknownHost = Object.assign(new Error("getaddrinfo ENOTFOUND nowhere"), { code: "ENOTFOUND" });
  t.like(judgeError(unknownHost, 10), { kind: "retry" });
});
