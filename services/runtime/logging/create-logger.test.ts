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
  requestContext.run({ requestId: "req-42", values: new Map() }, () => {
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

test("API keys are redacted as headers, as gRPC metadata and in the configuration", (t) => {
  const { lines, logger } = capture();
  logger.info({ "x-api-key": "k-top-level", metadata: { "x-api-key": "k-metadata", authorization: "Bearer m-1" } }, "call");
  logger.info({ req: { headers: { "x-api-key": "k-req", authorization: "Bearer r-1" } } }, "request");
  logger.info({ auth: { apiKeys: [{ name: "ops", role: "operator", key: "k-auth" }] } }, "auth");
  logger.info({ config: { auth: { apiKeys: [{ name: "ops", role: "operator", key: "k-config" }] } } }, "config");
  const text = JSON.stringify(lines);
  for (const secret of ["k-top-level", "k-metadata", "m-1", "k-req", "r-1", "k-auth", "k-config"]) t.false(text.includes(secret), secret);
  t.is((lines[0]!.metadata as Record<string, string>)["x-api-key"], "[redacted]");
});
