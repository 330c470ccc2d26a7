// The mail queue against a real SMTP server (smtp-server on loopback): plain, with AUTH, with
// STARTTLS (a certificate made here), TLS required but not offered, a server that refuses then
// accepts, one that always refuses (failed after the bound), the .eml fallback, the transactional
// enqueue, and two workers on one database. On embedded PGlite and, when configured, real PostgreSQL.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import test, { type ExecutionContext } from "ava";
import { randomBytes, webcrypto } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AddressObject, simpleParser } from "mailparser";
import { pino } from "pino";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import { createTestDatabaseUrl } from "../../../test/support/test-database.js";
import { realInfra } from "../../../test/support/real-infra.js";
import { until } from "../../../test/support/until.js";
import { openDatabase, type Database } from "../database/index.js";
import { createUnitOfWork } from "../outbox/index.js";
import { createMailQueue, MailMessageError, mailTables, smtpSettings, type MailQueue, type MailQueueOptions } from "./index.js";

const infra = realInfra();
const targets = infra.databaseUrl ? (["embedded", "postgres"] as const) : (["embedded"] as const);
const tables = mailTables("mailtest");
const mailModule = {
  name: "mailtest",
  entities: tables.entities,
  migrations: [{ name: "mailtest-0001-mail", class: tables.migrations[0]! }],
};
const quiet = pino({ level: "silent" });

interface Place {
  dataDir: string;
  url: string | undefined;
}

async function place(t: ExecutionContext, target: string): Promise<Place> {
  const dataDir = await mkdtemp(join(tmpdir(), "meshwork-mail-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  if (target !== "postgres") return { dataDir, url: undefined };
  const created = await createTestDatabaseUrl(infra.databaseUrl!);
  t.teardown(() => created.drop());
  return { dataDir, url: created.url };
}

async function open(t: ExecutionContext, at: Place): Promise<Database> {
  const db = await openDatabase({ url: at.url, dataDir: at.dataDir, modules: [mailModule], logger: quiet });
  t.teardown(() => db.close());
  return db;
}

/** A logger whose lines the test reads: nothing secret may be in them. */
function capturedLogger() {
  const lines: string[] = [];
  return { lines, logger: pino({ level: "debug" }, { write: (line: string) => void lines.push(line) }) };
}

interface Received {
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string | false;
  messageId: string;
  secure: boolean;
  user: string | undefined;
}

/** `Name <address>` or `address`, however the header quoted it. */
function addressOf(header: AddressObject | undefined): string {
  const first = header?.value[0];
  if (!first) return "";
  return first.name ? `${first.name} <${first.address}>` : (first.address ?? "");
}

async function smtpServer(t: ExecutionContext, options: Partial<SMTPServerOptions> & { refuse?: number } = {}) {
  const received: Received[] = [];
  const refused = { count: 0 };
  const { refuse = 0, ...serverOptions } = options;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onRcptTo(_address, _session, callback) {
      if (refused.count < refuse) {
        refused.count++;
        return callback(Object.assign(new Error("mailbox busy, try again later"), { responseCode: 451 }));
      }
      callback();
    },
    onData(stream, session, callback) {
      simpleParser(stream).then(
        (mail) => {
          received.push({
            from: addressOf(mail.from),
            to: addressOf(Array.isArray(mail.to) ? mail.to[0] : mail.to),
            subject: mail.subject ?? "",
            text: mail.text ?? "",
            html: mail.html ?? false,
            messageId: mail.messageId ?? "",
            secure: session.secure,
            user: session.user,
          });
          callback();
        },
        (err: Error) => callback(err),
      );
    },
    ...serverOptions,
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.server.address() as AddressInfo;
  return { received, refused, port };
}

async function selfSignedCertificate(): Promise<{ cert: string; key: string }> {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const keys = (await webcrypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: "CN=localhost",
    keys,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" } as webcrypto.EcdsaParams,
    notAfter: new Date(Date.now() + 86_400_000),
    extensions: [
      new x509.SubjectAlternativeNameExtension([
        { type: "ip", value: "127.0.0.1" },
        { type: "dns", value: "localhost" },
      ]),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey)).toString("base64");
  return {
    cert: cert.toString("pem"),
    key: `-----BEGIN PRIVATE KEY-----\n${pkcs8.match(/.{1,64}/g)!.join("\n")}\n-----END PRIVATE KEY-----\n`,
  };
}

function queueOn(
  t: ExecutionContext,
  db: Database,
  at: Place,
  options: Partial<MailQueueOptions> & { url?: string; requireTls?: boolean },
): MailQueue {
  const { url, requireTls = false, ...rest } = options;
  const queue = createMailQueue({
    tables,
    db,
    logger: quiet,
    settings: { url, requireTls, from: "Meshwork <no-reply@meshwork.test>" },
    settingsSection: "MailTest:Smtp",
    dataDir: at.dataDir,
    backoff: { initialDelayMs: 10, maxDelayMs: 50 },
    ...rest,
  });
  queue.start();
  t.teardown(() => queue.stop());
  return queue;
}

const secretToken = () => `rst_${randomBytes(32).toString("hex")}`;

async function enqueue(db: Database, queue: MailQueue, to: string, token: string): Promise<string> {
  return db.em().transactional(async (em) =>
    queue.enqueue(em, {
      to,
      subject: "Reset your password",
      text: `Your reset token: ${token}\nhttp://127.0.0.1:8081/reset?token=${token}`,
      html: `<p>Your reset token: <code>${token}</code></p>`,
    }),
  );
}

async function rowCount(db: Database): Promise<number> {
  return db.em().count(tables.entity, {});
}

for (const target of targets) {
  test(`${target}: plain SMTP: a committed message goes out at once (no poll needed), is deleted, and its token is never logged`, async (t) => {
    const at = await place(t, target);
    const db = await open(t, at);
    const smtp = await smtpServer(t);
    const { lines, logger } = capturedLogger();
    // An hour between polls: only the wake-up on commit can deliver within the wait.
    const queue = queueOn(t, db, at, { url: `smtp://127.0.0.1:${smtp.port}`, logger, pollIntervalMs: 3_600_000 });
    await until(() => lines.some((l) => l.includes("mail goes out over SMTP")), "the worker's first look at the queue");
    const token = secretToken();
    const id = await enqueue(db, queue, "Alice <alice@example.org>", token);
    const [mail] = await until(() => smtp.received.length > 0 && smtp.received, "the message at the SMTP server");
    t.is(mail!.from, "Meshwork <no-reply@meshwork.test>");
    t.is(mail!.to, "Alice <alice@example.org>");
    t.is(mail!.subject, "Reset your password");
    t.true(mail!.text.includes(token));
    t.true(String(mail!.html).includes(`<code>${token}</code>`));
    t.is(mail!.messageId, `<${id}@meshwork.test>`);
    t.false(mail!.secure);
    await until(async () => (await rowCount(db)) === 0, "the sent message to leave the queue");
    t.is(smtp.received.length, 1);
    t.false(lines.join("").includes(token), "the token is in no log line");
  });

  test(`${target}: AUTH with the URL's credentials; the password is redacted from the target and logs`, async (t) => {
    const at = await place(t, target);
    const db = await open(t, at);
    const password = "s3cret:p@ss/word";
    const smtp = await smtpServer(t, {
      disabledCommands: ["STARTTLS"],
      allowInsecureAuth: true,
      authOptional: false,
      onAuth(auth, _session, callback) {
        if (auth.username === "mailer@meshwork.test" && auth.password === password) return callback(null, { user: auth.username });
        callback(new Error("invalid credentials"));
      },
    });
    const { lines, logger } = capturedLogger();
    const url = `smtp://${encodeURIComponent("mailer@meshwork.test")}:${encodeURIComponent(password)}@127.0.0.1:${smtp.port}`;
    const queue = queueOn(t, db, at, { url, logger });
    t.false(queue.target.includes(encodeURIComponent(password)));
    t.regex(queue.target, /\*\*\*/);
    await enqueue(db, queue, "bob@example.org", secretToken());
    const [mail] = await until(() => smtp.received.length > 0 && smtp.received, "the authenticated message");
    t.is(mail!.user, "mailer@meshwork.test");
    const logged = lines.join("");
    t.false(logged.includes(password) || logged.includes(encodeURIComponent(password)), "the password is in no log line");
  });

  test(`${target}: STARTTLS when offered, and RequireTls refuses a server that does not offer it`, async (t) => {
    const at = await place(t, target);
    const db = await open(t, at);
    const { cert, key } = await selfSignedCertificate();
    const tlsServer = await smtpServer(t, { disabledCommands: ["AUTH"], key, cert });
    const queue = queueOn(t, db, at, { url: `smtp://127.0.0.1:${tlsServer.port}`, requireTls: true, tls: { ca: cert } });
    await enqueue(db, queue, "carol@example.org", secretToken());
    const [mail] = await until(() => tlsServer.received.length > 0 && tlsServer.received, "the message over STARTTLS");
    t.true(mail!.secure, "the session was upgraded to TLS");
    await until(async () => (await rowCount(db)) === 0, "the sent message to leave the queue");
    await queue.stop();

    const plainServer = await smtpServer(t);
    const strict = queueOn(t, db, at, { url: `smtp://127.0.0.1:${plainServer.port}`, requireTls: true });
    await enqueue(db, strict, "dave@example.org", secretToken());
    const row = await until(async () => {
      const [r] = await db.em().find(tables.entity, {});
      return r && r.attemptCount >= 2 && r.lastError !== null && r;
    }, "failed attempts over a connection without TLS");
    t.is(row.status, "pending", "kept for a retry");
    t.is(plainServer.received.length, 0, "nothing went out in the clear");
  });

  test(`${target}: a server that refuses then accepts gets the message once; one that always refuses leaves it failed after the bound`, async (t) => {
    const at = await place(t, target);
    const db = await open(t, at);
    const flaky = await smtpServer(t, { refuse: 2 });
    const { lines, logger } = capturedLogger();
    // An hour between polls: each retry goes out because the failed attempt wakes the worker.
    const queue = queueOn(t, db, at, { url: `smtp://127.0.0.1:${flaky.port}`, logger, pollIntervalMs: 3_600_000 });
    await enqueue(db, queue, "erin@example.org", secretToken());
    await until(() => flaky.received.length > 0, "the message after two refusals");
    t.is(flaky.refused.count, 2);
    // One retry per refusal (an attempt that also failed for another reason on a loaded machine, a
    // socket timing out, is retried all the same and says so in its own words).
    t.is(lines.filter((l) => l.includes("will retry") && l.includes("451")).length, 2);
    await until(async () => (await rowCount(db)) === 0, "the sent message to leave the queue");
    t.is(flaky.received.length, 1);
    await queue.stop();

    const refusing = await smtpServer(t, { refuse: Number.POSITIVE_INFINITY });
    const bounded = capturedLogger();
    const strict = queueOn(t, db, at, {
      url: `smtp://127.0.0.1:${refusing.port}`,
      logger: bounded.logger,
      maxAttempts: 3,
      pollIntervalMs: 3_600_000,
    });
    const token = secretToken();
    await enqueue(db, strict, "frank@example.org", token);
    const row = await until(async () => {
      const [r] = await db.em().find(tables.entity, {});
      return r?.status === "failed" && r;
    }, "the message marked failed");
    t.is(row.attemptCount, 3);
    t.is(refusing.refused.count, 3);
    t.regex(row.lastError ?? "", /451/);
    t.false((row.lastError ?? "").includes(token));
    t.deepEqual(await strict.depth(), { pending: 0, failed: 1 });
    const logged = bounded.lines.join("");
    t.regex(logged, /marked failed/);
    t.false(logged.includes(token), "the message body is in no log line");
  });

  test(`${target}: without an SMTP URL each message is an RFC 5322 .eml file under <Data:Dir>/mail/`, async (t) => {
    const at = await place(t, target);
    const db = await open(t, at);
    const queue = queueOn(t, db, at, {});
    t.is(queue.target, join(at.dataDir, "mail"));
    const token = secretToken();
    const id = await enqueue(db, queue, "grace@example.org", token);
    const dir = join(at.dataDir, "mail");
    const emlFiles = () =>
      readdir(dir).then(
        (files) => files.filter((f) => f.endsWith(".eml")),
        () => [] as string[],
      );
    const [name] = await until(async () => (await emlFiles()).length > 0 && emlFiles(), "an .eml file");
    t.true(name!.endsWith(`${id}.eml`));
    const raw = await readFile(join(dir, name!));
    t.true(raw.includes("\r\nSubject: Reset your password\r\n"), "CRLF line ends");
    const mail = await simpleParser(raw);
    t.is(mail.subject, "Reset your password");
    t.is(addressOf(mail.from), "Meshwork <no-reply@meshwork.test>");
    t.is(addressOf(Array.isArray(mail.to) ? mail.to[0] : mail.to), "grace@example.org");
    t.true(mail.text?.includes(token));
    t.true(String(mail.html).includes(token));
    await until(async () => (await rowCount(db)) === 0, "the written message to leave the queue");
  });

  test(`${target}: a message is queued with the transaction that causes it: a rollback queues nothing`, async (t) => {
    const at = await place(t, target);
    const db = await open(t, at);
    const smtp = await smtpServer(t);
    const queue = queueOn(t, db, at, { url: `smtp://127.0.0.1:${smtp.port}` });
    const uow = createUnitOfWork({ db, outbox: { notify() {} } });
    await t.throwsAsync(
      uow.run(async (tx) => {
        queue.enqueue(tx.em, { to: "heidi@example.org", subject: "never", text: "rolled back" });
        await tx.em.flush();
        throw new Error("the change failed");
      }),
      { message: "the change failed" },
    );
    t.is(await rowCount(db), 0, "nothing queued");
    await uow.run(async (tx) => {
      queue.enqueue(tx.em, { to: "heidi@example.org", subject: "committed", text: "kept" });
    });
    await until(() => smtp.received.length > 0, "the committed message");
    await until(async () => (await rowCount(db)) === 0, "the sent message to leave the queue");
    t.deepEqual(
      smtp.received.map((m) => m.subject),
      ["committed"],
    );
    const em = db.em();
    t.throws(() => queue.enqueue(em, { to: "a@b.example\r\nBcc: evil@example.org", subject: "x", text: "y" }), {
      instanceOf: MailMessageError,
    });
    t.throws(() => queue.enqueue(em, { to: "a@b.example", subject: "x\r\nBcc: evil@example.org", text: "y" }), {
      instanceOf: MailMessageError,
    });
  });

  test(`${target}: two workers on one database deliver each message exactly once`, async (t) => {
    const at = await place(t, target);
    const first = await open(t, at);
    // Embedded PostgreSQL belongs to one process: there the two workers share it; a real server gets two pools.
    const second = target === "postgres" ? await open(t, at) : first;
    const smtp = await smtpServer(t);
    const url = `smtp://127.0.0.1:${smtp.port}`;
    const a = queueOn(t, first, at, { url });
    queueOn(t, second, at, { url });
    const ids = new Set<string>();
    for (let i = 0; i < 12; i++) ids.add(await enqueue(first, a, `user${i}@example.org`, secretToken()));
    await until(async () => smtp.received.length >= 12 && (await rowCount(first)) === 0, "every message sent and deleted");
    t.is(smtp.received.length, 12);
    // Two workers send concurrently, so the arrival order is free: compare sorted.
    t.deepEqual(smtp.received.map((m) => m.messageId.replace(/^<|@.*$/g, "")).sort(), [...ids].sort());
  });
}

test("the settings fragment: a URL with or without credentials, smtp or smtps; defaults; the URL is secret", (t) => {
  const schema = smtpSettings();
  t.deepEqual(schema.parse({}), { requireTls: false, from: "Meshwork <no-reply@localhost>" });
  t.is(schema.parse({ url: "smtp://relay.example.org:25" }).url, "smtp://relay.example.org:25");
  t.is(schema.parse({ url: "smtps://u:p@relay.example.org" }).url, "smtps://u:p@relay.example.org");
  t.true(schema.parse({ requireTls: "true" }).requireTls);
  t.false(schema.safeParse({ url: "http://relay.example.org" }).success);
  t.is(smtpSettings({ from: "Orders <orders@example.org>" }).parse({}).from, "Orders <orders@example.org>");
});
