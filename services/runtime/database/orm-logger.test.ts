import test from "ava";
import { OrmLogger } from "./orm-logger.js";

test("statements logged in debug mode keep their shape but not their string values", (t) => {
  const lines: { obj: unknown; msg: string }[] = [];
  const sink = (obj: unknown, msg?: string) => lines.push({ obj, msg: msg ?? "" });
  const target = { debug: sink, info: sink, warn: sink, error: sink, child: () => target };
  const logger = new OrmLogger({ writer: () => {}, debugMode: ["query", "query-params"] }, target);
  logger.log("query", "insert into \"t\" (\"name\", \"key\") values ('Van 7', 'it''s-a-secret') [took 2 ms]", {
    level: "info",
    enabled: true,
  });
  t.is(lines.length, 1);
  t.is(lines[0]!.msg, 'insert into "t" ("name", "key") values (\'…\', \'…\') [took 2 ms]');
});
