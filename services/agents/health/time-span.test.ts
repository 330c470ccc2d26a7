import test from "ava";
import { formatTimeSpan } from "./time-span.js";

test("durations are hh:mm:ss.fffffff, days in front past a day", (t) => {
  t.is(formatTimeSpan(0), "00:00:00.0000000");
  t.is(formatTimeSpan(1.23456), "00:00:00.0012346");
  t.is(formatTimeSpan(3_723_004.5), "01:02:03.0045000");
  t.is(formatTimeSpan(90_061_000), "1.01:01:01.0000000");
});
