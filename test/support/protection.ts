// Helpers for the device protection suites: accounts, logins and bearer calls on its REST front.
import { randomUUID } from "node:crypto";
import { sendJson, type RestAnswer } from "./rest.js";

export interface Tokens {
  access_token: string;
  refresh_token: string;
  expires_in: number;
}

export interface ErrorBody {
  error: string;
  message: string;
}

export const PASSWORD = "correct horse battery staple";

/** A fresh address for each account, so suites and reruns never collide. */
export const freshEmail = (label = "user") => `${label}-${randomUUID().slice(0, 8)}@example.com`;

export function protectionClient(base: string) {
  const call = <B = unknown>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    sendJson<B>(`${base}${path}`, method, body, headers);
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  return {
    call,
    bearer,
    authed: <B = unknown>(token: string, method: string, path: string, body?: unknown): Promise<RestAnswer<B>> =>
      call<B>(method, path, body, bearer(token)),
    async register(email = freshEmail(), displayName = "Test User", password = PASSWORD) {
      const res = await call<{ account_id: string; email: string; display_name: string }>("POST", "/v1/auth/register", {
        email,
        password,
        display_name: displayName,
      });
      if (res.status !== 201) throw new Error(`register answered ${res.status}: ${res.text}`);
      return res.body;
    },
    async login(email: string, password = PASSWORD): Promise<Tokens> {
      const res = await call<Tokens>("POST", "/v1/auth/login", { email, password });
      if (res.status !== 200) throw new Error(`login answered ${res.status}: ${res.text}`);
      return res.body;
    },
  };
}
