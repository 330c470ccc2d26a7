import test from "ava";
import { safeError } from "../logging/safe-error.js";
import { describeDbError, isDatabaseUnavailable } from "./describe-db-error.js";

// Shapes as MikroORM, knex and pg produce them (see test/faults for the real ones).
function pgError(code: string, message: string, extra: Record<string, unknown> = {}) {
  return Object.assign(new Error(message), { name: "DatabaseError", code, severity: "FATAL", routine: "ProcessInterrupts", ...extra });
}

test("outages are told apart from bugs and bad input", (t) => {
  t.true(isDatabaseUnavailable(pgError("57P01", "terminating connection due to administrator command")));
  t.true(isDatabaseUnavailable(pgError("57P03", "the database system is starting up")));
  t.true(isDatabaseUnavailable(pgError("08006", "connection failure")));
  t.true(
    isDatabaseUnavailable(
      Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { name: "DriverException", code: "ECONNREFUSED" }),
    ),
  );
  t.true(isDatabaseUnavailable(Object.assign(new Error("read ECONNRESET"), { name: "DriverException", code: "ECONNRESET" })));
  t.true(isDatabaseUnavailable(new Error("Connection terminated unexpectedly")));
  t.true(
    isDatabaseUnavailable(
      Object.assign(new Error("Knex: Timeout acquiring a connection. The pool is probably full."), { name: "KnexTimeoutError" }),
    ),
  );
  // A NUL byte in a bound value: class 08 by number, a bad request by meaning.
  t.false(isDatabaseUnavailable(pgError("08P01", "invalid message format")));
  // Work the server would do on a retry: conflicts, lock waits and timeouts.
  t.true(isDatabaseUnavailable(pgError("40001", "could not serialize access due to concurrent update", { severity: "ERROR" })));
  t.true(isDatabaseUnavailable(pgError("40P01", "deadlock detected", { severity: "ERROR" })));
  t.true(isDatabaseUnavailable(pgError("55P03", 'could not obtain lock on row in relation "tracking_device"', { severity: "ERROR" })));
  t.true(isDatabaseUnavailable(pgError("57014", "canceling statement due to statement timeout", { severity: "ERROR" })));
  t.false(isDatabaseUnavailable(pgError("23505", "duplicate key value violates unique constraint", { severity: "ERROR" })));
  t.false(isDatabaseUnavailable(pgError("23505", "duplicate key value violates unique constraint")));
  t.false(isDatabaseUnavailable(new TypeError("Cannot read properties of undefined (reading 'pool')")));
  t.false(isDatabaseUnavailable(new Error("connect ECONNREFUSED to the webhook receiver")));
});

test("a description keeps the state, statement kind and table, and drops every value", (t) => {
  const detail = "Key (name)=(van-secret) already exists.";
  const err = Object.assign(
    new Error(
      `insert into "tracking_asset" ("name", "note") values ('van-secret', 'it''s - here') - duplicate key value violates unique constraint "tracking_asset_name_key"\n - detail: ${detail}`,
    ),
    { name: "UniqueConstraintViolationException", code: "23505", detail, constraint: "tracking_asset_name_key", table: "tracking_asset" },
  );
  const described = describeDbError(err)!;
  t.like(described, {
    sqlState: "23505",
    statement: 'insert into "tracking_asset"',
    constraint: "tracking_asset_name_key",
    message: 'duplicate key value violates unique constraint "tracking_asset_name_key"',
    unavailable: false,
  });
  const invalid = pgError("22P02", 'select * from "t" where "id" = \'x-secret\' - invalid input syntax for type uuid: "x-secret"', {
    severity: "ERROR",
  });
  t.is(describeDbError(invalid)!.message, 'invalid input syntax for type uuid: "…"');
  t.notRegex(JSON.stringify([safeError(err), safeError(invalid)]), /secret/);
});

test("safeError strips SQL and bindings from any error, a wrapped driver error included", (t) => {
  const knex = Object.assign(new Error("Knex: Timeout acquiring a connection."), {
    name: "KnexTimeoutError",
    sql: "update t set secret = ?",
    bindings: ["hunter2"],
  });
  const wrapped = new Error("could not save", {
    cause: Object.assign(new Error("insert into t (a) values ('hunter2') - value too long"), {
      name: "DatabaseError",
      code: "22001",
      severity: "ERROR",
    }),
  });
  const other = Object.assign(new Error("plain failure"), { query: "select 'hunter2'", parameters: ["hunter2"] });
  const logged = JSON.stringify([safeError(knex), safeError(wrapped), safeError(other)]);
  t.notRegex(logged, /hunter2/);
  t.regex(logged, /22001/);
  t.regex(logged, /plain failure/);
  t.is(safeError("just text"), "just text");
});
