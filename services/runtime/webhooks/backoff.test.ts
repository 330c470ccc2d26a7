// Backoff with full jitter, and Retry-After in both of its forms.
import test from "ava";
import { backoffDelayMs, maxRetryAfterMs, parseRetryAfter, retryDelayMs } from "./backoff.js";

const policy = { initialDelayMs: 1000, maxDelayMs: 30_000 };

test("the ceiling doubles per failure up to the maximum", (t) => {
  const top = () => 0.999999999;
  t.deepEqual(
    [1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelayMs(n, policy, top)),
    [1000, 2000, 4000, 8000, 16000, 30000, 30000],
  );
});

test("full jitter: anywhere from 0 to the ceiling", (t) => {
  t.is(
    backoffDelayMs(3, policy, () => 0),
    0,
  );
  t.is(
    backoffDelayMs(3, policy, () => 0.5),
    2000,
  );
  for (let i = 0; i < 200; i++) {
    const delay = backoffDelayMs(4, policy);
    t.true(delay >= 0 && delay <= 8000);
  }
});

test("a huge failure count stays at the maximum", (t) => {
  t.is(
    backoffDelayMs(10_000, policy, () => 0.999999999),
    30_000,
  );
});

test("Retry-After in seconds", (t) => {
  t.is(parseRetryAfter("0", 0), 0);
  t.is(parseRetryAfter("5", 0), 5000);
  t.is(parseRetryAfter(" 120 ", 0), 120_000);
});

test("Retry-After as an HTTP date, relative to now; a past date is now", (t) => {
  const now = Date.parse("Sun, 06 Nov 1994 08:49:37 GMT");
  t.is(parseRetryAfter("Sun, 06 Nov 1994 08:50:07 GMT", now), 30_000);
  t.is(parseRetryAfter("Sunday, 06-Nov-94 08:49:47 GMT", now), 10_000);
  t.is(parseRetryAfter("Sun, 06 Nov 1994 08:00:00 GMT", now), 0);
});

test("Retry-After that is absent or unreadable is ignored", (t) => {
  for (const value of [undefined, "", "-1", "1.5", "soon", "tomorrow 10:00"]) t.is(parseRetryAfter(value, 0), undefined, String(value));
});

test("Retry-After is capped at a day", (t) => {
  t.is(parseRetryAfter("999999999", 0), maxRetryAfterMs);
});

test("Retry-After wins over backoff when given", (t) => {
  t.is(retryDelayMs(1, policy, 45_000), 45_000);
  t.is(
    retryDelayMs(2, policy, undefined, () => 0.5),
    1000,
  );
});
