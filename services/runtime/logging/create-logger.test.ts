import test from "ava";
import { Writable } from "node:stream";
import { requestContext } from "../host/request-context.js";
import { createLogger } from "./index.js";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: createLogger({ level: "info", destination }) };
}

test("every line written while handling a request carries its request id", (t) => {
  const { lines, logger } = capture();
  logger.info("outside");
  requestContext.run({ requestId: "req-42" }, () => {
    logger.info({ step: 1 }, "inside");
    logger.child({ component: "db" }).warn("inside, from a child");
  });
  t.is(lines[0]!.requestId, undefined);
  t.is(lines[1]!.requestId, "req-42");
  t.is(lines[2]!.requestId, "req-42");
  t.is(lines[2]!.component, "db");
  t.is(lines[1]!.level, "info");
});

test("credentials are redacted wherever they appear", (t) => {
  const { lines, logger } = capture();
  logger.info(
    {
      headers: { authorization: "Bearer abc.def", "x-api-key": "k-123" },
      token: "t-1",
      config: { password: "pw", secret: "s", apiKey: "a" },
      databaseUrl: "postgres://u:pw@h/db",
    },
    "request",
  );
  const text = JSON.stringify(lines[0]);
  for (const secret of ["abc.def", "k-123", "t-1", '"pw"', '"s"', '"a"', "u:pw"]) t.false(text.includes(secret), secret);
  t.is((lines[0]!.headers as Record<string, string>).authorization, "[redacted]");
});
