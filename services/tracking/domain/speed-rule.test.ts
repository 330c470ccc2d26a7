// The speed-alert rule: strictly above the threshold, the asset's or the default, once per cooldown.
import test from "ava";
import { cooledDown, judgeThreshold } from "./speed-rule.js";

const at = (minutes: number) => new Date(Date.UTC(2026, 0, 1, 12, minutes));
const cooldownMs = 5 * 60_000;

test("under and at the threshold: nothing; above: over", (t) => {
  t.deepEqual(judgeThreshold(80, 90, 120), { over: false, thresholdKmh: 90 });
  t.like(judgeThreshold(90, 90, 120), { over: false });
  t.like(judgeThreshold(90.1, 90, 120), { over: true });
  t.like(judgeThreshold(null, 90, 120), { over: false }, "no speed reported");
});

test("an asset without a threshold (or no asset) uses the default", (t) => {
  t.deepEqual(judgeThreshold(110, null, 120), { thresholdKmh: 120, over: false });
  t.deepEqual(judgeThreshold(121, null, 120), { thresholdKmh: 120, over: true });
});

test("the cooldown runs from the last alert's time, measured in observation time", (t) => {
  t.true(cooledDown(at(10), null, cooldownMs), "no alert before");
  t.false(cooledDown(at(10), at(6), cooldownMs), "4 minutes later");
  t.true(cooledDown(at(10), at(5), cooldownMs), "exactly 5 minutes later");
  t.false(cooledDown(at(10), at(12), cooldownMs), "an alert newer than the reading");
});
