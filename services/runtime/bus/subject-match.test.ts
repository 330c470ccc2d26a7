// Wildcard semantics must match NATS exactly, or the in-process bus would route differently from production.
import test from "ava";
import { subjectMatches, subjectsOverlap } from "./subject-match.js";

const matches: [string, string, boolean][] = [
  ["tracking.v1.>", "tracking.v1.asset.created", true],
  ["tracking.v1.>", "tracking.v1", false],
  ["tracking.v1.>", "tracking.v1.asset", true],
  ["tracking.*.asset.created", "tracking.v1.asset.created", true],
  ["tracking.*.asset.created", "tracking.v1.x.asset.created", false],
  ["tracking.v1.*", "tracking.v1.asset.created", false],
  ["tracking.v1.asset.created", "tracking.v1.asset.created", true],
  ["tracking.v1.asset.created", "tracking.v1.asset.deleted", false],
  [">", "anything.at.all", true],
  ["*", "one", true],
  ["*", "one.two", false],
  ["*.>", "one", false],
];

for (const [pattern, subject, expected] of matches) {
  test(`${pattern} ${expected ? "matches" : "does not match"} ${subject}`, (t) => {
    t.is(subjectMatches(pattern, subject), expected);
  });
}

const overlaps: [string, string, boolean][] = [
  ["tracking.v1.>", "tracking.>", true],
  ["tracking.v1.>", "protection.v1.>", false],
  ["a.*.c", "a.b.*", true],
  ["a.*", "a.b.c", false],
  ["a.>", "a", false],
  [">", "a", true],
];

for (const [a, b, expected] of overlaps) {
  test(`${a} and ${b} ${expected ? "overlap" : "do not overlap"}`, (t) => {
    t.is(subjectsOverlap(a, b), expected);
    t.is(subjectsOverlap(b, a), expected);
  });
}
