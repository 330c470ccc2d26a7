// Seeding device protection through its REST paths, as the events and analytics suites need:
// accounts, devices registered with an enrollment token and a CSR (the real registration path),
// accepted partners (invite, accept), organizations holding a device.
import { makeCsr } from "./device-csr.js";
import { freshEmail, type protectionClient } from "./protection.js";

export type ProtectionApi = ReturnType<typeof protectionClient>;

export interface Account {
  email: string;
  id: string;
  token: string;
}

export async function account(api: ProtectionApi, email = freshEmail("events")): Promise<Account> {
  const registered = await api.register(email);
  const tokens = await api.login(email);
  return { email, id: registered.account_id, token: tokens.access_token };
}

async function expect<B>(answer: Promise<{ status: number; text: string; body: B }>, status: number, what: string): Promise<B> {
  const res = await answer;
  if (res.status !== status) throw new Error(`${what} answered ${res.status}: ${res.text}`);
  return res.body;
}

export async function enrollment(api: ProtectionApi, bearer: string, body: object = { tier: "self" }) {
  return expect(api.authed<{ id: string; token: string }>(bearer, "POST", "/v1/enrollments", body), 201, "POST /v1/enrollments");
}

/** Registers a device of `owner` with an enrollment token (made by `owner` unless given). */
export async function registerDevice(api: ProtectionApi, owner: Account, token?: string, hostname = "laptop.local") {
  const enrollmentToken = token ?? (await enrollment(api, owner.token)).token;
  const body = {
    enrollment_token: enrollmentToken,
    platform: "linux",
    hostname,
    agent_version: "1.2.3",
    client_cert_csr: (await makeCsr("ed25519")).pem,
  };
  const registered = await expect(api.authed<{ device_id: string }>(owner.token, "POST", "/v1/devices", body), 201, "POST /v1/devices");
  const device = await expect(
    api.authed<{ id: string; enrollment_id: string }>(owner.token, "GET", `/v1/devices/${registered.device_id}`),
    200,
    "GET /v1/devices/{id}",
  );
  return { id: device.id, enrollmentId: device.enrollment_id };
}

/** `a` invites `b`, `b` accepts: answers the relationship's id. */
export async function partners(api: ProtectionApi, a: Account, b: Account): Promise<string> {
  await expect(api.authed(a.token, "POST", "/v1/partners/invite", { email: b.email }), 202, "invite");
  const list = await expect(api.authed<{ data: { id: string; direction: string }[] }>(b.token, "GET", "/v1/partners"), 200, "partners");
  const incoming = list.data.find((p) => p.direction === "incoming");
  if (!incoming) throw new Error("no incoming invitation");
  await expect(api.authed(b.token, "POST", `/v1/partners/${incoming.id}/accept`), 200, "accept");
  return incoming.id;
}

/** An organization of `owner` holding `deviceId` (owner's), with `member` as a member. */
export async function organizationHolding(api: ProtectionApi, owner: Account, deviceId: string, member?: Account): Promise<string> {
  const org = await expect(
    api.authed<{ id: string }>(owner.token, "POST", "/v1/organizations", { name: "Events org", description: "e2e" }),
    201,
    "POST /v1/organizations",
  );
  if (member) {
    await expect(
      api.authed(owner.token, "POST", `/v1/organizations/${org.id}/members`, { email: member.email, role: "member" }),
      201,
      "add member",
    );
  }
  await expect(api.authed(owner.token, "POST", `/v1/organizations/${org.id}/devices`, { device_id: deviceId }), 201, "assign device");
  return org.id;
}
