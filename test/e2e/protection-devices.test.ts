// Devices end to end through the REST front with fetch: the device CA's certificate and CRL (no
// token), registration with an enrollment token and a CSR made by @peculiar/x509 (Ed25519 and
// P-256 accepted; RSA, tampered and bad fields refused with the token left usable), certificates
// and the CRL verified against the CA with node:crypto and @peculiar/x509, the owner's list and
// detail, deletion, heartbeats with their commands, the configuration, renewal, the offline worker
// (heartbeat 2 s) and the events on the PROTECTION stream.
import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import test, { type ExecutionContext } from "ava";
import {
  DeviceCertificateRenewedSchema,
  DeviceDeletedSchema,
  DeviceHeartbeatMissedSchema,
  DeviceRegisteredSchema,
  EnrollmentActivatedSchema,
} from "../../gen/protection/v1/events_pb.js";
import { generateDeviceCa } from "../../services/protection/pki/index.js";
import { makeCsr, tamperedCsr, x509 } from "../support/device-csr.js";
import { type EventWatch, type SeenEvent, watchStream } from "../support/event-watch.js";
import { type ErrorBody, freshEmail, protectionClient } from "../support/protection.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

let mesh: TestMesh;
let api: ReturnType<typeof protectionClient>;
let base: string;
let events: EventWatch<SeenEvent>;

test.before(async () => {
  mesh = await startTestMesh({
    flags: [
      // Every test registers accounts: cheap password hashes keep the two shared cores for the rest.
      "--Protection:Passwords:MemoryKiB=8",
      "--Protection:Passwords:Iterations=1",
      "--Protection:RateLimits:Register:Limit=100000",
      "--Protection:RateLimits:LoginPerIp:Limit=100000",
      "--Protection:Devices:HeartbeatIntervalSeconds=2",
      "--Protection:PublicBaseUrl=http://devices.example:8081",
    ],
  });
  base = mesh.frontUrl("protection");
  api = protectionClient(base);
  events = await watchStream(mesh, "protection.v1.>", "PROTECTION");
});

test.after.always(async () => {
  await events?.stop();
  await mesh?.close();
});

interface Registered {
  device_id: string;
  client_cert: string;
  ca_cert: string;
  blocklist_version: number;
  config: Record<string, unknown>;
}

const expectError = (t: ExecutionContext, res: { status: number; body: unknown }, status: number, code: string, field?: string) => {
  t.is(res.status, status, JSON.stringify(res.body));
  t.is((res.body as ErrorBody).error, code, JSON.stringify(res.body));
  if (field) t.regex((res.body as ErrorBody).message, new RegExp(field), JSON.stringify(res.body));
};

async function account() {
  const email = freshEmail("device");
  const registered = await api.register(email);
  const tokens = await api.login(email);
  return { email, id: registered.account_id, token: tokens.access_token };
}

async function enrollmentToken(bearer: string, body: object = { tier: "self" }) {
  const res = await api.authed<{ id: string; token: string }>(bearer, "POST", "/v1/enrollments", body);
  if (res.status !== 201) throw new Error(`enrollment answered ${res.status}: ${res.text}`);
  return res.body;
}

const registration = async (enrollment_token: string, kind: "ed25519" | "p256" = "ed25519") => ({
  enrollment_token,
  platform: "linux",
  hostname: "laptop.local",
  agent_version: "1.2.3",
  client_cert_csr: (await makeCsr(kind)).pem,
});

/** An account with one registered device. */
async function deviceOf(kind: "ed25519" | "p256" = "ed25519") {
  const owner = await account();
  const enrollment = await enrollmentToken(owner.token);
  const res = await api.authed<Registered>(owner.token, "POST", "/v1/devices", await registration(enrollment.token, kind));
  if (res.status !== 201) throw new Error(`register answered ${res.status}: ${res.text}`);
  return { owner, enrollment, registered: res.body };
}

async function caCertificate(): Promise<X509Certificate> {
  const res = await fetch(`${base}/v1/pki/ca.pem`);
  return new X509Certificate(await res.text());
}

async function crlSerials(): Promise<string[]> {
  const res = await fetch(`${base}/v1/pki/crl`);
  const crl = new x509.X509Crl(new Uint8Array(await res.arrayBuffer()));
  return crl.entries.map((e) => e.serialNumber.toLowerCase().replace(/^(00)+/, ""));
}

const eventsOf = <T>(subject: string, schema: Parameters<typeof fromBinary>[0]) =>
  events.seen.filter((e) => e.subject === subject).map((e) => fromBinary(schema, e.data) as unknown as T);

test("GET /v1/pki/ca.pem and /v1/pki/crl answer without a token: a P-256 CA, and a CRL it signed", async (t) => {
  const pem = await fetch(`${base}/v1/pki/ca.pem`);
  t.is(pem.status, 200);
  t.is(pem.headers.get("content-type"), "application/x-pem-file");
  const ca = new X509Certificate(await pem.text());
  t.true(ca.ca);
  t.true(ca.verify(ca.publicKey), "self-signed");
  t.is(ca.publicKey.asymmetricKeyDetails?.namedCurve, "prime256v1");
  const crl = await fetch(`${base}/v1/pki/crl`);
  t.is(crl.status, 200);
  t.is(crl.headers.get("content-type"), "application/pkix-crl");
  const parsed = new x509.X509Crl(new Uint8Array(await crl.arrayBuffer()));
  t.true(await parsed.verify({ publicKey: await new x509.X509Certificate(ca.toString()).publicKey.export() }));
  t.is(parsed.issuer, ca.subject);
});

for (const kind of ["ed25519", "p256"] as const) {
  test(`register with ${kind === "p256" ? "a P-256" : "an Ed25519"} CSR: 201 with a certificate the CA signed, the enrollment active`, async (t) => {
    const owner = await account();
    const enrollment = await enrollmentToken(owner.token);
    const csr = await makeCsr(kind);
    const res = await api.authed<Registered>(owner.token, "POST", "/v1/devices", {
      enrollment_token: enrollment.token,
      platform: "windows",
      hostname: "desk-01",
      agent_version: "2.0.0",
      client_cert_csr: csr.pem,
    });
    t.is(res.status, 201, res.text);
    t.deepEqual(Object.keys(res.body).sort(), ["blocklist_version", "ca_cert", "client_cert", "config", "device_id"]);
    t.regex(res.body.device_id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    t.is(res.body.blocklist_version, 0);
    const key = (await api.call<{ key_id: string; public_key: string }>("GET", "/v1/blocklist/public-key")).body;
    t.deepEqual(res.body.config, {
      blocklist_url: "http://devices.example:8081/v1/blocklist",
      heartbeat_interval_secs: 2,
      blocklist_key_id: key.key_id,
      blocklist_public_key: key.public_key,
      protection: { dns_blocking: true, app_blocking: true, bypass_detection: true },
      reporting: { send_block_events: true, send_tamper_events: true },
    });
    const ca = await caCertificate();
    t.is(new X509Certificate(res.body.ca_cert).fingerprint256, ca.fingerprint256);
    const cert = new X509Certificate(res.body.client_cert);
    t.true(cert.verify(ca.publicKey));
    t.true(cert.checkIssued(ca));
    t.is(cert.subject, `CN=${res.body.device_id}`);
    t.is(
      cert.subjectAltName,
      `URI:urn:meshwork:device:${res.body.device_id}, URI:urn:meshwork:enrollment:${enrollment.id}, URI:urn:meshwork:tier:self`,
    );
    t.deepEqual(cert.keyUsage, ["1.3.6.1.5.5.7.3.2"], "EKU clientAuth");
    t.deepEqual(cert.publicKey.export({ type: "spki", format: "der" }), csr.spki);
    const days = (new Date(cert.validTo).getTime() - Date.now()) / 86_400_000;
    t.true(days > 364 && days <= 365, `valid ${days} days`);
    const points = new x509.X509Certificate(res.body.client_cert).getExtension(x509.CRLDistributionPointsExtension);
    t.deepEqual(
      [...(points?.distributionPoints ?? [])].flatMap((p) => p.distributionPoint?.fullName?.map((n) => n.uniformResourceIdentifier) ?? []),
      ["http://devices.example:8081/v1/pki/crl"],
    );

    const detail = await api.authed<Record<string, unknown>>(owner.token, "GET", `/v1/devices/${res.body.device_id}`);
    const answeredAt = Date.now();
    t.is(detail.status, 200);
    // Active until 3 heartbeat intervals (6 s here) pass without one; a loaded machine may take that
    // long to get here, or to answer the read (so the time is taken once the answer is in).
    const quiet = answeredAt - Date.parse(detail.body.created_at as string);
    if (quiet < 6_000) t.is(detail.body.status, "active", `${quiet} ms after registration`);
    else t.true(detail.body.status === "active" || detail.body.status === "offline");
    t.deepEqual(detail.body, {
      id: res.body.device_id,
      hostname: "desk-01",
      platform: "windows",
      status: detail.body.status,
      last_heartbeat: null,
      enrollment_id: enrollment.id,
      agent_version: "2.0.0",
      account_id: owner.id,
      organization_id: null,
      blocklist_version: 0,
      integrity_ok: null,
      certificate_serial: cert.serialNumber.toLowerCase().replace(/^(00)+/, ""),
      certificate_not_after: detail.body.certificate_not_after,
      created_at: detail.body.created_at,
    });
    t.is(new Date(detail.body.certificate_not_after as string).getTime(), new Date(cert.validTo).getTime());
    const activated = await api.authed<{ status: string; device_id: string; account_id: string }>(
      owner.token,
      "GET",
      `/v1/enrollments/${enrollment.id}`,
    );
    t.is(activated.body.status, "active");
    t.is(activated.body.device_id, res.body.device_id);
    t.is(activated.body.account_id, owner.id);

    await until(
      () =>
        eventsOf<{ deviceId: string; enrollmentId: string }>("protection.v1.device.registered", DeviceRegisteredSchema).some(
          (e) => e.deviceId === res.body.device_id && e.enrollmentId === enrollment.id,
        ) &&
        eventsOf<{ enrollmentId: string }>("protection.v1.enrollment.activated", EnrollmentActivatedSchema).some(
          (e) => e.enrollmentId === enrollment.id,
        ),
      "device.registered and enrollment.activated",
    );
  });
}

test("register refuses bad fields with 400 naming them, and the token stays usable", async (t) => {
  const owner = await account();
  const enrollment = await enrollmentToken(owner.token);
  const good = await registration(enrollment.token);
  const cases: [object, string][] = [
    [{ ...good, platform: "beos" }, "platform"],
    [{ ...good, hostname: "" }, "hostname"],
    [{ ...good, hostname: "h".repeat(254) }, "hostname"],
    [{ ...good, agent_version: "v".repeat(65) }, "agent_version"],
    [{ ...good, client_cert_csr: (await makeCsr("rsa")).pem }, "client_cert_csr"],
    [{ ...good, client_cert_csr: await tamperedCsr() }, "client_cert_csr"],
    [{ ...good, client_cert_csr: "not a csr" }, "client_cert_csr"],
    [{ ...good, client_cert_csr: undefined }, "client_cert_csr"],
    [{ ...good, enrollment_token: undefined }, "enrollment_token"],
    [{ ...good, platform: 7 }, "platform"],
    [{ ...good, extra: 1 }, "extra"],
  ];
  for (const [body, field] of cases) {
    const res = await api.authed(owner.token, "POST", "/v1/devices", body);
    expectError(t, res, 400, "VALIDATION_ERROR", field);
  }
  const rsa = await api.authed<ErrorBody>(owner.token, "POST", "/v1/devices", { ...good, client_cert_csr: (await makeCsr("rsa")).pem });
  t.regex(rsa.body.message, /RSA/);
  const res = await api.authed(owner.token, "POST", "/v1/devices", good);
  t.is(res.status, 201, "the token survived every refusal");
});

test("register: unknown or expired token 404, redeemed 409, another account's self token 403, no bearer 401", async (t) => {
  const owner = await account();
  const other = await account();
  const enrollment = await enrollmentToken(owner.token);
  expectError(t, await api.authed(owner.token, "POST", "/v1/devices", await registration(`enr_${"A".repeat(43)}`)), 404, "TOKEN_NOT_FOUND");
  expectError(t, await api.authed(owner.token, "POST", "/v1/devices", await registration("garbage")), 404, "TOKEN_NOT_FOUND");
  expectError(t, await api.authed(other.token, "POST", "/v1/devices", await registration(enrollment.token)), 403, "FORBIDDEN");
  const unauthenticated = await api.call("POST", "/v1/devices", await registration(enrollment.token));
  expectError(t, unauthenticated, 401, "UNAUTHORIZED");
  t.is(unauthenticated.headers.get("www-authenticate"), "Bearer");
  t.is((await api.authed(owner.token, "POST", "/v1/devices", await registration(enrollment.token))).status, 201);
  expectError(
    t,
    await api.authed(owner.token, "POST", "/v1/devices", await registration(enrollment.token)),
    409,
    "DEVICE_ALREADY_ENROLLED",
  );

  const expiring = await enrollmentToken(owner.token);
  await mesh
    .db!.em()
    .execute(`update "protection_enrollment" set "token_expires_at" = now() - interval '1 second' where "id" = ?`, [expiring.id]);
  expectError(t, await api.authed(owner.token, "POST", "/v1/devices", await registration(expiring.token)), 404, "TOKEN_NOT_FOUND");
});

test("one enrollment token redeemed by many registrations at once: exactly one 201", async (t) => {
  const owner = await account();
  const enrollment = await enrollmentToken(owner.token);
  const bodies = await Promise.all(Array.from({ length: 8 }, () => registration(enrollment.token)));
  const answers = await Promise.all(bodies.map((body) => api.authed(owner.token, "POST", "/v1/devices", body)));
  t.deepEqual(answers.map((a) => a.status).sort(), [201, 409, 409, 409, 409, 409, 409, 409]);
  const list = await api.authed<{ data: unknown[] }>(owner.token, "GET", "/v1/devices");
  t.is(list.body.data.length, 1);
});

test("list and detail are the owner's only; unknown ids are 404 DEVICE_NOT_FOUND", async (t) => {
  const { owner, registered } = await deviceOf();
  const other = await account();
  const list = await api.authed<{ data: Record<string, unknown>[] }>(owner.token, "GET", "/v1/devices");
  t.is(list.status, 200);
  t.deepEqual(Object.keys(list.body), ["data"]);
  t.is(list.body.data.length, 1);
  t.deepEqual(Object.keys(list.body.data[0]!).sort(), [
    "agent_version",
    "enrollment_id",
    "hostname",
    "id",
    "last_heartbeat",
    "platform",
    "status",
  ]);
  t.deepEqual((await api.authed<{ data: unknown[] }>(other.token, "GET", "/v1/devices")).body, { data: [] });
  for (const path of [`/v1/devices/${registered.device_id}`, `/v1/devices/${registered.device_id}/config`]) {
    expectError(t, await api.authed(other.token, "GET", path), 404, "DEVICE_NOT_FOUND");
  }
  expectError(t, await api.authed(other.token, "DELETE", `/v1/devices/${registered.device_id}`), 404, "DEVICE_NOT_FOUND");
  expectError(t, await api.authed(owner.token, "GET", "/v1/devices/not-a-uuid"), 404, "DEVICE_NOT_FOUND");
  expectError(t, await api.authed(owner.token, "GET", "/v1/devices/01900000-0000-7000-8000-000000000000"), 404, "DEVICE_NOT_FOUND");
  expectError(t, await api.call("GET", "/v1/devices"), 401, "UNAUTHORIZED");
});

test("DELETE: 204, the record gone, its certificate on the CRL at once, the enrollment kept", async (t) => {
  const { owner, enrollment, registered } = await deviceOf("p256");
  const serial = new X509Certificate(registered.client_cert).serialNumber.toLowerCase().replace(/^(00)+/, "");
  t.false((await crlSerials()).includes(serial));
  const res = await api.authed(owner.token, "DELETE", `/v1/devices/${registered.device_id}`);
  t.is(res.status, 204);
  t.is(res.text, "");
  t.true((await crlSerials()).includes(serial), "on the CRL at once");
  expectError(t, await api.authed(owner.token, "GET", `/v1/devices/${registered.device_id}`), 404, "DEVICE_NOT_FOUND");
  expectError(t, await api.authed(owner.token, "DELETE", `/v1/devices/${registered.device_id}`), 404, "DEVICE_NOT_FOUND");
  const kept = await api.authed<{ status: string; device_id: string }>(owner.token, "GET", `/v1/enrollments/${enrollment.id}`);
  t.is(kept.body.status, "active");
  t.is(kept.body.device_id, registered.device_id);
  await until(
    () =>
      eventsOf<{ deviceId: string }>("protection.v1.device.deleted", DeviceDeletedSchema).some((e) => e.deviceId === registered.device_id),
    "device.deleted",
  );
});

test("heartbeat: recorded, the current blocklist version, force_blocklist_update when it differs; bad fields 400", async (t) => {
  const { owner, registered } = await deviceOf();
  const path = `/v1/devices/${registered.device_id}/heartbeat`;
  const body = { status: "ok", blocklist_version: 0, agent_version: "1.2.4", integrity_ok: false };
  const res = await api.authed<Record<string, unknown>>(owner.token, "POST", path, body);
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body, { blocklist_version: 0, config_changed: false, commands: [] });
  const detail = await api.authed<Record<string, unknown>>(owner.token, "GET", `/v1/devices/${registered.device_id}`);
  t.is(detail.body.agent_version, "1.2.4");
  t.is(detail.body.integrity_ok, false);
  t.true(Math.abs(new Date(detail.body.last_heartbeat as string).getTime() - Date.now()) < 10_000);
  const behind = await api.authed<{ commands: string[] }>(owner.token, "POST", path, { ...body, blocklist_version: 3 });
  t.deepEqual(behind.body.commands, ["force_blocklist_update"]);
  t.is((await api.authed<Record<string, unknown>>(owner.token, "GET", `/v1/devices/${registered.device_id}`)).body.blocklist_version, 3);

  const cases: [object, string][] = [
    [{ ...body, status: "fine" }, "status"],
    [{ ...body, blocklist_version: -1 }, "blocklist_version"],
    [{ ...body, agent_version: "" }, "agent_version"],
    [{ ...body, integrity_ok: undefined }, "integrity_ok"],
    [{ ...body, blocklist_version: undefined }, "blocklist_version"],
    [{ ...body, status: undefined }, "status"],
    [{ ...body, blocklist_version: "x" }, "blocklist_version"],
  ];
  for (const [bad, field] of cases) expectError(t, await api.authed(owner.token, "POST", path, bad), 400, "VALIDATION_ERROR", field);
  const other = await account();
  expectError(t, await api.authed(other.token, "POST", path, body), 404, "DEVICE_NOT_FOUND");
});

test("heartbeat asks for renew_certificate within RenewBeforeDays of expiry; renewal supersedes the old certificate", async (t) => {
  const { owner, registered } = await deviceOf();
  const path = `/v1/devices/${registered.device_id}/heartbeat`;
  const body = { status: "degraded", blocklist_version: 0, agent_version: "1.2.3", integrity_ok: true };
  await mesh
    .db!.em()
    .execute(`update "protection_device" set "certificate_not_after" = now() + interval '10 days' where "id" = ?`, [registered.device_id]);
  t.deepEqual((await api.authed<{ commands: string[] }>(owner.token, "POST", path, body)).body.commands, ["renew_certificate"]);

  const old = new X509Certificate(registered.client_cert);
  const csr = await makeCsr("p256");
  const renew = `/v1/devices/${registered.device_id}/renew-certificate`;
  const res = await api.authed<{ device_id: string; client_cert: string; ca_cert: string }>(owner.token, "POST", renew, {
    client_cert_csr: csr.pem,
  });
  t.is(res.status, 200, res.text);
  t.deepEqual(Object.keys(res.body).sort(), ["ca_cert", "client_cert", "device_id"]);
  t.is(res.body.device_id, registered.device_id);
  const fresh = new X509Certificate(res.body.client_cert);
  t.true(fresh.verify((await caCertificate()).publicKey));
  t.deepEqual(fresh.publicKey.export({ type: "spki", format: "der" }), csr.spki);
  t.is(fresh.subject, `CN=${registered.device_id}`);
  const serials = await crlSerials();
  t.true(serials.includes(old.serialNumber.toLowerCase().replace(/^(00)+/, "")), "the superseded certificate is on the CRL");
  t.false(serials.includes(fresh.serialNumber.toLowerCase().replace(/^(00)+/, "")));
  const detail = await api.authed<Record<string, unknown>>(owner.token, "GET", `/v1/devices/${registered.device_id}`);
  t.is(detail.body.certificate_serial, fresh.serialNumber.toLowerCase().replace(/^(00)+/, ""));
  t.deepEqual((await api.authed<{ commands: string[] }>(owner.token, "POST", path, body)).body.commands, []);

  expectError(
    t,
    await api.authed(owner.token, "POST", renew, { client_cert_csr: (await makeCsr("rsa")).pem }),
    400,
    "VALIDATION_ERROR",
    "client_cert_csr",
  );
  expectError(t, await api.authed(owner.token, "POST", renew, {}), 400, "VALIDATION_ERROR", "client_cert_csr");
  const other = await account();
  expectError(t, await api.authed(other.token, "POST", renew, { client_cert_csr: csr.pem }), 404, "DEVICE_NOT_FOUND");
  await until(
    () =>
      eventsOf<{ deviceId: string }>("protection.v1.device.certificate_renewed", DeviceCertificateRenewedSchema).some(
        (e) => e.deviceId === registered.device_id,
      ),
    "device.certificate_renewed",
  );
});

test("config: the enrollment's flags; a PATCH makes config_changed true until the config is read again", async (t) => {
  const { owner, enrollment, registered } = await deviceOf();
  const config = await api.authed<Record<string, unknown>>(owner.token, "GET", `/v1/devices/${registered.device_id}/config`);
  t.is(config.status, 200);
  t.deepEqual(config.body, registered.config);
  const beat = () =>
    api.authed<{ config_changed: boolean }>(owner.token, "POST", `/v1/devices/${registered.device_id}/heartbeat`, {
      status: "ok",
      blocklist_version: 0,
      agent_version: "1.2.3",
      integrity_ok: true,
    });
  t.false((await beat()).body.config_changed);
  const patched = await api.authed(owner.token, "PATCH", `/v1/enrollments/${enrollment.id}`, { unenroll_delay_hours: 60 });
  t.is(patched.status, 200, patched.text);
  t.false((await beat()).body.config_changed, "the delay is not part of the device's config");
  // Tightening a self enrollment is allowed: a flag turned on. Turn one off directly first.
  await mesh.db!.em().execute(`update "protection_enrollment" set "app_blocking" = false where "id" = ?`, [enrollment.id]);
  t.true((await beat()).body.config_changed);
  const read = await api.authed<{ protection: Record<string, boolean> }>(owner.token, "GET", `/v1/devices/${registered.device_id}/config`);
  t.false(read.body.protection.app_blocking);
  t.false((await beat()).body.config_changed, "received with GET config");
  const on = await api.authed(owner.token, "PATCH", `/v1/enrollments/${enrollment.id}`, { protection: { app_blocking: true } });
  t.is(on.status, 200, on.text);
  t.true((await beat()).body.config_changed);
});

test("a device silent for 3 intervals turns offline with one heartbeat_missed per outage; a heartbeat makes it active", async (t) => {
  const { owner, registered } = await deviceOf();
  const id = registered.device_id;
  const status = async () => (await api.authed<{ status: string }>(owner.token, "GET", `/v1/devices/${id}`)).body.status;
  const missed = () =>
    eventsOf<{ deviceId: string }>("protection.v1.device.heartbeat_missed", DeviceHeartbeatMissedSchema).filter((e) => e.deviceId === id);
  const rows = async () =>
    mesh
      .db!.em()
      .execute<{ event_type: string; detail: Record<string, unknown> }[]>(
        `select "event_type", "detail" from "protection_device_event" where "device_id" = ? and "event_type" = 'heartbeat_missed' order by "timestamp"`,
        [id],
      );
  await until(async () => (await status()) === "offline", "the device offline", { timeoutMs: 30_000 });
  await until(() => missed().length === 1, "one heartbeat_missed event");
  const recorded = await rows();
  t.is(recorded.length, 1);
  t.is(recorded[0]!.event_type, "heartbeat_missed");
  t.is(recorded[0]!.detail.account_id, owner.id);

  const beat = await api.authed(owner.token, "POST", `/v1/devices/${id}/heartbeat`, {
    status: "ok",
    blocklist_version: 0,
    agent_version: "1.2.3",
    integrity_ok: true,
  });
  t.is(beat.status, 200);
  t.is(await status(), "active");
  await until(async () => (await status()) === "offline", "offline again after the next outage", { timeoutMs: 30_000 });
  await until(async () => (await rows()).length === 2, "a second heartbeat_missed row for the second outage");
  await until(() => missed().length === 2, "a second heartbeat_missed event");
  t.is((await rows()).length, 2, "one per outage");
});

test("a CA from Protection:Pki:CaCertFile and CaKeyFile signs the certificates; one of the two alone stops start-up", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "meshwork-device-ca-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const generated = await generateDeviceCa({ commonName: "Configured Device CA" });
  const certFile = join(dir, "ca.pem");
  const keyFile = join(dir, "ca.key");
  writeFileSync(certFile, generated.certPem);
  writeFileSync(keyFile, generated.keyPem);
  await t.throwsAsync(() => startTestMesh({ flags: [`--Protection:Pki:CaCertFile=${certFile}`] }), { message: /CaCertFile.*CaKeyFile/ });
  const configured = await startTestMesh({
    flags: [
      "--Protection:Passwords:MemoryKiB=8",
      "--Protection:Passwords:Iterations=1",
      `--Protection:Pki:CaCertFile=${certFile}`,
      `--Protection:Pki:CaKeyFile=${keyFile}`,
      "--Protection:Pki:CertificateValidityDays=30",
    ],
  });
  t.teardown(() => configured.close());
  const client = protectionClient(configured.frontUrl("protection"));
  const pem = await (await fetch(`${configured.frontUrl("protection")}/v1/pki/ca.pem`)).text();
  t.is(new X509Certificate(pem).fingerprint256, new X509Certificate(generated.certPem).fingerprint256);
  const email = freshEmail("ca");
  await client.register(email);
  const token = (await client.login(email)).access_token;
  const enrollment = await client.authed<{ token: string }>(token, "POST", "/v1/enrollments", { tier: "self" });
  const res = await client.authed<Registered>(token, "POST", "/v1/devices", await registration(enrollment.body.token, "p256"));
  t.is(res.status, 201, res.text);
  const cert = new X509Certificate(res.body.client_cert);
  t.true(cert.verify(new X509Certificate(generated.certPem).publicKey));
  t.is(cert.issuer, "CN=Configured Device CA");
  const days = (new Date(cert.validTo).getTime() - Date.now()) / 86_400_000;
  t.true(days > 29 && days <= 30, `valid ${days} days`);
});
