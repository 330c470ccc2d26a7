// The speed-alert rule: strictly above the threshold, the asset's or the default, once per cooldown.
import test from "ava";
import { judgeSpeed } from "./speed-rule.js";

const at = (minutes: number) => new Date(Date.UTC(2026, 0, 1, 12, minutes));
const base = { assetThresholdKmh: 90, defaultThresholdKmh: 120, observedAt: at(10), lastAlertAt: null, cooldownMs: 5 * 60_000 };

test("under and at the threshold: nothing; above: an alert", (t) => {
  t.like(judgeSpeed({ ...base, speedKmh: 80 }), { over: false, raise: false, thresholdKmh: 90 });
  t.like(judgeSpeed({ ...base, speedKmh: 90 }), { over: false, raise: false });
  t.like(judgeSpeed({ ...base, speedKmh: 90.1 }), { over: true, raise: true });
  t.like(judgeSpeed({ ...base, speedKmh: null }), { over: false, raise: false }, "no speed reported");
});

test("an asset without a threshold (or no asset) uses the default", (t) => {
  t.like(judgeSpeed({ ...base, assetThresholdKmh: null, speedKmh: 110 }), { thresholdKmh: 120, raise: false });
  t.like(judgeSpeed({ ...base, assetThresholdKmh: null, speedKmh: 121 }), { thresholdKmh: 120, raise: true });
});

test("the cooldown runs from the last alert's time, measured in observation time", (t) => {
  t.like(judgeSpeed({ ...base, speedKmh: 150, lastAlertAt: at(6) }), { over: true, raise: false }, "4 minutes later");
  t.like(judgeSpeed({ ...base, speedKmh: 150, lastAlertAt: at(5) }), { raise: true }, "exactly 5 minutes later");
  t.like(judgeSpeed({ ...base, speedKmh: 150, lastAlertAt: at(12) }), { raise: false }, "an alert newer than the reading");
});
