// The CORS policy as a table: what a preflight and an answer carry for each origin and method.
import test from "ava";
import { createCors } from "./cors.js";

const preflight = (origin: string, method: string, headers?: string) => ({
  origin,
  "access-control-request-method": method,
  ...(headers ? { "access-control-request-headers": headers } : {}),
});

test("unset origins: any origin, `*` without credentials, the origin itself with them", (t) => {
  const open = createCors({});
  t.true(open.isPreflight("OPTIONS", preflight("https://a.test", "GET")));
  t.false(open.isPreflight("OPTIONS", { origin: "https://a.test" }), "an OPTIONS without a requested method is no preflight");
  t.false(open.isPreflight("GET", preflight("https://a.test", "GET")));
  t.deepEqual(open.preflight(preflight("https://a.test", "delete", "X-Api-Key")), {
    vary: "Origin",
    "access-control-allow-origin": "*",
    "access-control-allow-methods": "DELETE",
    "access-control-allow-headers": "X-Api-Key",
  });
  const credentialed = createCors({ allowCredentials: true });
  t.like(credentialed.preflight(preflight("https://a.test", "GET")), {
    "access-control-allow-origin": "https://a.test",
    "access-control-allow-credentials": "true",
  });
  t.deepEqual(open.answer({}), {}, "no Origin, no CORS headers");
  t.like(open.answer({ origin: "https://a.test" }), {
    "access-control-allow-origin": "*",
    "access-control-expose-headers": "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, X-Request-Id",
  });
});

test("a restricted list: other origins and methods get nothing but Vary", (t) => {
  const cors = createCors({ allowedOrigins: ["https://good.test/"], allowedMethods: ["get", "POST"] });
  t.like(cors.preflight(preflight("https://GOOD.test", "POST")), {
    "access-control-allow-origin": "https://GOOD.test",
    "access-control-allow-methods": "GET, POST",
  });
  t.deepEqual(cors.preflight(preflight("https://evil.test", "POST")), { vary: "Origin" });
  t.deepEqual(cors.preflight(preflight("https://good.test", "PUT")), { vary: "Origin" });
  t.deepEqual(cors.answer({ origin: "https://evil.test" }), { vary: "Origin" });
  t.like(cors.answer({ origin: "https://good.test" }), { "access-control-allow-origin": "https://good.test" });
});
