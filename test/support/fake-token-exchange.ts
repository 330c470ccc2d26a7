// The assistant's token exchange on loopback: `GET /copilot_internal/v2/token` with
// `Authorization: token <oauth>` answers `{ token, expires_at, refresh_in, endpoints: { api } }`
// for the OAuth tokens it knows, 401 otherwise. It remembers the API tokens it issued so a fake API
// (startFakeOpenAi's `authorize`) can accept them, and revoke() makes one answer 401 there. `hold`
// keeps answers back until release(), to show concurrent callers sharing one exchange.
import { randomBytes } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedExchange {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface FakeTokenExchange {
  /** The TokenExchangeUrl to configure. */
  url: string;
  requests: RecordedExchange[];
  /** The `endpoints.api` answered. */
  api: string;
  /** Lifetime of the tokens issued from now on (default 1800 s). */
  ttlSeconds: number;
  /** A status every exchange answers with, until set back to undefined. */
  status: number | undefined;
  /** While true, answers wait for release(). */
  hold: boolean;
  release(): void;
  /** API tokens issued, oldest first. */
  issued: string[];
  revoke(token: string): void;
  /** Whether an `Authorization: Bearer <token>` header carries a live issued token. */
  acceptsBearer(authorization: string | undefined): boolean;
  close(): Promise<void>;
}

export async function startFakeTokenExchange(options: { oauthTokens: string[]; api: string }): Promise<FakeTokenExchange> {
  const waiting: Array<() => void> = [];
  const revoked = new Set<string>();
  const fake: FakeTokenExchange = {
    url: "",
    requests: [],
    api: options.api,
    ttlSeconds: 1800,
    status: undefined,
    hold: false,
    release() {
      fake.hold = false;
      for (const answer of waiting.splice(0)) answer();
    },
    issued: [],
    revoke: (token) => revoked.add(token),
    acceptsBearer(authorization) {
      const token = authorization?.startsWith("Bearer ") ? authorization.slice(7) : undefined;
      return token !== undefined && fake.issued.includes(token) && !revoked.has(token);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };

  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    fake.requests.push({ method: req.method ?? "", path, headers: { ...req.headers } });
    const answer = () => respond(req.method, path, req.headers.authorization, res);
    if (fake.hold) waiting.push(answer);
    else answer();
  });

  function respond(method: string | undefined, path: string, authorization: string | undefined, res: ServerResponse): void {
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    const oauth = authorization?.startsWith("token ") ? authorization.slice(6) : undefined;
    if (method !== "GET" || path !== "/copilot_internal/v2/token") json(404, { message: "Not Found" });
    else if (fake.status !== undefined) json(fake.status, { message: "unavailable" });
    else if (!oauth || !options.oauthTokens.includes(oauth)) json(401, { message: "Bad credentials" });
    else issue(res);
  }

  function issue(res: ServerResponse): void {
    const now = Math.floor(Date.now() / 1000);
    const token = `tid=${randomBytes(8).toString("hex")};exp=${now + fake.ttlSeconds};sku=free;${randomBytes(12).toString("hex")}`;
    fake.issued.push(token);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        token,
        expires_at: now + fake.ttlSeconds,
        refresh_in: Math.max(0, fake.ttlSeconds - 300),
        endpoints: { api: fake.api, proxy: fake.api, telemetry: fake.api },
        chat_enabled: true,
        sku: "free_limited_copilot",
      }),
    );
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/copilot_internal/v2/token`;
  return fake;
}
