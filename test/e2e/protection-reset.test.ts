// Device protection's password reset by mail and the e-mail change notice, end to end through the
// REST front with fetch and an SMTP server (`smtp-server`) that receives what the mesh sends: the
// same answer for any address, the token read from the mail and spent once, superseded, expired
// and malformed tokens, a refused new password that keeps the token, every token family revoked,
// the login lock lifted, the limits, the events, and no secret in logs or events.
import { createHash } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import test, { type ExecutionContext } from "ava";
import { AccountPasswordResetSchema, TokenFamilyRevokedSchema } from "../../gen/protection/v1/events_pb.js";
import { createLogger } from "../../services/runtime/logging/index.js";
import { watchStream } from "../support/event-watch.js";
import { type MailInbox, type ReceivedMail, startMailInbox } from "../support/mail-inbox.js";
import { type ErrorBody, freshEmail, PASSWORD, protectionClient } from "../support/protection.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

const PUBLIC_BASE = "https://protect.example.org/app";
const NEW_PASSWORD = "a brand new passphrase 42";
const TOKEN_IN_TEXT = /\b(rst_[0-9a-f]{64})\b/;

let inbox: MailInbox;
let mesh: TestMesh;
let api: ReturnType<typeof protectionClient>;
const logLines: string[] = [];

test.before(async () => {
  inbox = await startMailInbox();
  mesh = await startTestMesh({
    flags: [
      `--Protection:Smtp:Url=${inbox.url}`,
      `--Protection:PublicBaseUrl=${PUBLIC_BASE}`,
      "--Protection:RateLimits:Register:Limit=100000",
      "--Protection:RateLimits:LoginPerIp:Limit=100000",
      "--Protection:RateLimits:ResetPassword:Limit=100000",
      "--Protection:Lockout:MaxFailures=3",
    ],
    // Everything the mesh logs, debug included: no reset token or password may be in it.
    logger: createLogger({ level: "debug", destination: { write: (line: string) => void logLines.push(line) } }),
  });
  api = protectionClient(mesh.frontUrl("protection"));
});

test.after.always(async () => {
  await mesh?.close();
  await inbox?.close();
});

const expectError = (t: ExecutionContext, res: { status: number; body: unknown }, status: number, code: string) => {
  t.is(res.status, status, JSON.stringify(res.body));
  t.is((res.body as ErrorBody).error, code);
  t.is(typeof (res.body as ErrorBody).message, "string");
};

const forgot = (email: string) => api.call<{ message: string }>("POST", "/v1/auth/forgot-password", { email });
const reset = (token: string, newPassword = NEW_PASSWORD) =>
  api.call<{ message: string }>("POST", "/v1/auth/reset-password", { token, new_password: newPassword });

/** The reset token of a mail, checked against the link that carries it too. */
function tokenOf(t: ExecutionContext, mail: ReceivedMail): string {
  const token = TOKEN_IN_TEXT.exec(mail.text)?.[1];
  if (!token) throw new Error(`no reset token in: ${mail.text}`);
  t.true(mail.text.includes(`${PUBLIC_BASE}/reset-password?token=${token}`), "the link carries the token");
  return token;
}

test.serial("forgot-password answers alike for any address; the mailed token resets once and revokes every session", async (t) => {
  const watch = await watchStream(mesh, "protection.v1.>", "PROTECTION");
  t.teardown(() => watch.stop());
  const email = freshEmail("reset");
  const unknown = freshEmail("nobody");
  const { account_id } = await api.register(email, "Reset Me");
  const first = await api.login(email);
  const second = await api.login(email);

  const known = await forgot(email.toUpperCase());
  const notKnown = await forgot(unknown);
  t.is(known.status, 200);
  t.is(notKnown.status, 200);
  t.deepEqual(known.body, notKnown.body, "the same body whether or not the address is registered");
  t.deepEqual(Object.keys(known.body), ["message"]);

  const [mail] = await inbox.waitFor(email, 1, "the reset mail");
  t.regex(mail!.text, /Reset Me/);
  const token = tokenOf(t, mail!);

  // A refused new password names new_password and leaves the token usable.
  const weak = await reset(token, "password1234");
  expectError(t, weak, 400, "VALIDATION_ERROR");
  t.regex((weak.body as ErrorBody).message, /new_password/);
  expectError(t, await reset(token, "short"), 400, "VALIDATION_ERROR");
  expectError(t, await reset(token, email), 400, "VALIDATION_ERROR");

  const done = await reset(token);
  t.is(done.status, 200, done.text);
  t.is(typeof done.body.message, "string");
  expectError(t, await reset(token, "yet another passphrase 7"), 401, "INVALID_RESET_TOKEN");

  // Both logins' families are revoked at once: access and refresh tokens.
  for (const old of [first, second]) {
    expectError(t, await api.authed(old.access_token, "GET", "/v1/accounts/me"), 401, "INVALID_TOKEN");
    const refreshed = await api.call<ErrorBody>("POST", "/v1/auth/refresh", { refresh_token: old.refresh_token });
    t.is(refreshed.status, 401);
    t.true(["TOKEN_FAMILY_REVOKED", "INVALID_REFRESH_TOKEN"].includes(refreshed.body.error), refreshed.body.error);
  }
  expectError(t, await api.call("POST", "/v1/auth/login", { email, password: PASSWORD }), 401, "INVALID_CREDENTIALS");
  const fresh = await api.login(email, NEW_PASSWORD);
  t.is((await api.authed(fresh.access_token, "GET", "/v1/accounts/me")).status, 200);

  const mine = await until(() => {
    const found = watch.seen.filter((e) => Buffer.from(e.data).toString("latin1").includes(account_id));
    return found.filter((e) => e.subject !== "protection.v1.account.registered").length >= 3 && found;
  }, "the reset's events");
  const resetEvent = mine.find((e) => e.subject === "protection.v1.account.password_reset");
  t.truthy(resetEvent);
  t.is(fromBinary(AccountPasswordResetSchema, resetEvent!.data).accountId, account_id);
  const revoked = mine
    .filter((e) => e.subject === "protection.v1.token_family.revoked")
    .map((e) => fromBinary(TokenFamilyRevokedSchema, e.data));
  t.is(revoked.length, 2, "one revocation per family");
  t.true(revoked.every((r) => r.reason === "password_reset"));
  for (const e of watch.seen) {
    const text = Buffer.from(e.data).toString("latin1");
    for (const secret of [token, NEW_PASSWORD, email, email.split("@")[0]!]) t.false(text.includes(secret), `${e.subject} holds no secret`);
  }
  // Nothing went to the unknown address, and no log line holds a secret.
  t.is(inbox.to(unknown).length, 0);
  const logs = logLines.join("\n");
  for (const secret of [token, NEW_PASSWORD, PASSWORD, "password1234"]) t.false(logs.includes(secret), "the logs hold no secret");
});

test.serial("the newest token supersedes the others; malformed, unknown, expired and spent tokens are refused", async (t) => {
  const email = freshEmail("supersede");
  await api.register(email);
  t.is((await forgot(email)).status, 200);
  const older = tokenOf(t, (await inbox.waitFor(email, 1))[0]!);
  t.is((await forgot(email)).status, 200);
  const newer = tokenOf(t, (await inbox.waitFor(email, 2))[1]!);
  t.not(older, newer);
  expectError(t, await reset(older), 401, "INVALID_RESET_TOKEN");

  expectError(t, await reset(""), 400, "VALIDATION_ERROR");
  for (const bad of ["rst_", "rst_xyz", `rtk_${"a".repeat(64)}`, `rst_${"0".repeat(64)}`, `rst_${"A".repeat(64)}`]) {
    const res = await reset(bad);
    expectError(t, res, 401, "INVALID_RESET_TOKEN");
    t.is(res.headers.get("www-authenticate"), "Bearer");
  }

  // Expired: its lifetime is passed in the database (an hour is long for a test).
  await mesh
    .db!.em()
    .getConnection()
    .execute(`update "protection_password_reset" set "expires_at" = now() - interval '1 second' where "token_hash" = ?`, [
      createHash("sha256").update(newer).digest("hex"),
    ]);
  expectError(t, await reset(newer), 401, "INVALID_RESET_TOKEN");
  const expiredBody = JSON.stringify((await reset(newer)).body);
  t.false(expiredBody.includes(newer), "error bodies never hold the token");

  // Two resets with one token at once: one spends it.
  t.is((await forgot(email)).status, 200);
  const raced = tokenOf(t, (await inbox.waitFor(email, 3))[2]!);
  const statuses = (await Promise.all([reset(raced), reset(raced, "another fine passphrase 9")])).map((r) => r.status);
  t.deepEqual(statuses.sort(), [200, 401]);

  // Missing fields are the front's own refusal.
  expectError(t, await api.call("POST", "/v1/auth/reset-password", { token: newer }), 400, "VALIDATION_ERROR");
  expectError(t, await api.call("POST", "/v1/auth/forgot-password", {}), 400, "VALIDATION_ERROR");
  expectError(t, await forgot("not an address"), 400, "VALIDATION_ERROR");
});

test.serial("forgot and reset stay open while the e-mail is locked; the reset lifts the lock", async (t) => {
  const email = freshEmail("locked");
  await api.register(email);
  for (let i = 0; i < 3; i++)
    expectError(t, await api.call("POST", "/v1/auth/login", { email, password: "wrong wrong wrong" }), 401, "INVALID_CREDENTIALS");
  expectError(t, await api.call("POST", "/v1/auth/login", { email, password: PASSWORD }), 429, "RATE_LIMIT_EXCEEDED");
  t.is((await forgot(email)).status, 200, "forgot is open while locked");
  const token = tokenOf(t, (await inbox.waitFor(email, 1))[0]!);
  t.is((await reset(token)).status, 200, "reset is open while locked");
  t.is((await api.call("POST", "/v1/auth/login", { email, password: NEW_PASSWORD })).status, 200, "the lock is lifted");
  // The failure count went with it: two failures do not lock again.
  for (let i = 0; i < 2; i++) t.is((await api.call("POST", "/v1/auth/login", { email, password: "wrong wrong wrong" })).status, 401);
  t.is((await api.call("POST", "/v1/auth/login", { email, password: NEW_PASSWORD })).status, 200);
});

test.serial("forgot-password is limited per e-mail, known or not", async (t) => {
  const known = freshEmail("limited");
  await api.register(known);
  for (const email of [known, freshEmail("unknown")]) {
    for (let i = 0; i < 3; i++) t.is((await forgot(email)).status, 200);
    const over = await forgot(email.toUpperCase());
    expectError(t, over, 429, "RATE_LIMIT_EXCEEDED");
    const retryAfter = Number(over.headers.get("retry-after"));
    t.true(retryAfter >= 1 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
  }
  t.is((await forgot(freshEmail("other"))).status, 200, "other addresses are not limited");
  await inbox.waitFor(known, 3, "three reset mails, no fourth");
});

test.serial("a changed e-mail gets a notice at the old address; its reset token no longer works", async (t) => {
  const old = freshEmail("before");
  const next = freshEmail("after");
  await api.register(old, "Mover");
  const tokens = await api.login(old);
  t.is((await forgot(old)).status, 200);
  const token = tokenOf(t, (await inbox.waitFor(old, 1))[0]!);

  const unchanged = await api.authed(tokens.access_token, "PATCH", "/v1/accounts/me", { email: old.toUpperCase() });
  t.is(unchanged.status, 200);
  const changed = await api.authed<{ email: string }>(tokens.access_token, "PATCH", "/v1/accounts/me", { email: next });
  t.is(changed.status, 200);
  t.is(changed.body.email, next);
  const mails = await inbox.waitFor(old, 2, "the e-mail change notice");
  const notice = mails[1]!;
  t.regex(notice.subject, /e-mail address was changed/i);
  t.true(notice.text.includes(next), "the notice names the new address");
  t.is(inbox.to(next).length, 0, "nothing goes to the new address");
  t.is(inbox.to(old).length, 2, "one notice for one change");
  expectError(t, await reset(token), 401, "INVALID_RESET_TOKEN");
});

test("reset-password is limited per client address", async (t) => {
  const limited = await startTestMesh({ flags: ["--Protection:RateLimits:ResetPassword:Limit=2"] });
  t.teardown(() => limited.close());
  const client = protectionClient(limited.frontUrl("protection"));
  const attempt = () => client.call("POST", "/v1/auth/reset-password", { token: `rst_${"1".repeat(64)}`, new_password: NEW_PASSWORD });
  expectError(t, await attempt(), 401, "INVALID_RESET_TOKEN");
  expectError(t, await attempt(), 401, "INVALID_RESET_TOKEN");
  const over = await attempt();
  expectError(t, over, 429, "RATE_LIMIT_EXCEEDED");
  t.true(Number(over.headers.get("retry-after")) >= 1);
});
