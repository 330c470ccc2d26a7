import test from "ava";
import { parse } from "csv-parse/sync";
import { toCsv } from "./csv.js";

test("RFC 4180: quoting of commas, quotes and newlines round-trips through a real parser", (t) => {
  const rows = [
    ["plain", 1.5, true, null],
    ['has "quotes"', "a,b", "line\nbreak", "cr\rhere"],
    [new Date("2026-01-02T03:04:05.000Z"), "", undefined, 0],
  ];
  const text = toCsv(["a", "b", "c", "d"], rows);
  t.true(text.endsWith("\r\n"));
  const parsed = parse(text, { relax_column_count: false }) as string[][];
  t.deepEqual(parsed, [
    ["a", "b", "c", "d"],
    ["plain", "1.5", "true", ""],
    ['has "quotes"', "a,b", "line\nbreak", "cr\rhere"],
    ["2026-01-02T03:04:05.000Z", "", "", "0"],
  ]);
});
