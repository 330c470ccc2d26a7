// The array literals the engine binds for its multi-row statements: NULLs, quoting, and the
// forms PostgreSQL reads back exactly.
import test from "ava";
import { pgArray } from "./sql.js";

test("uuids are written bare; NULL and anything else are handled like node-postgres would", (t) => {
  const a = "0b6e3f36-3c1f-4c55-9a43-2a5c1f0d7e21";
  const b = "7F2C0E55-9E0B-4A8E-8D52-51B3C8E8B0A1";
  t.is(pgArray.uuids([]), "{}");
  t.is(pgArray.uuids([a, b]), `{${a},${b}}`);
  t.is(pgArray.uuids([a, null]), `{${a},NULL}`);
  t.is(pgArray.uuids(['not,a"uuid']), '{"not,a\\"uuid"}');
});

test("texts are quoted with backslashes and quotes escaped; the word NULL stays text", (t) => {
  t.is(pgArray.texts(["bulk", null, "NULL", 'say "hi"', "a\\b", "", "x,y{z}"]), '{"bulk",NULL,"NULL","say \\"hi\\"","a\\\\b","","x,y{z}"}');
});

test("numbers, times and booleans", (t) => {
  t.is(pgArray.numbers([51.5, -0.1278, null, 0, 1e-7, 5000]), "{51.5,-0.1278,NULL,0,1e-7,5000}");
  t.is(pgArray.times([new Date(Date.UTC(2026, 2, 1, 10, 0, 0, 123)), null]), "{2026-03-01T10:00:00.123Z,NULL}");
  t.is(pgArray.booleans([true, false]), "{t,f}");
});
