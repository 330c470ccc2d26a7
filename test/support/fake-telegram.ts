// A Telegram Bot API on loopback speaking its wire protocol (`<url>/bot<token>/<method>`, JSON
// answers `{ ok, result }` or `{ ok: false, error_code, description, parameters? }`), for the
// channel tests: getMe; getUpdates as a long poll (query string, JSON or form body) that confirms
// and forgets the updates below `offset` and holds the request up to `timeout` seconds until an
// update arrives; sendMessage (JSON), with a 429 carrying `parameters.retry_after` scriptable once.
// A wrong token is 401. `outage` destroys every socket (held polls too) until it is lifted.
// How many getUpdates are held at once is counted (one bot token must have one poller: Telegram
// answers a second one 409), so tests running several instances can see there is only one.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface TelegramMessageInput {
  chatId: number;
  fromId: number;
  text?: string;
  isBot?: boolean;
  /** A non-text message (a sticker): no `text`. */
  sticker?: boolean;
}

export interface SentTelegramMessage {
  chat_id: string | number;
  text: string;
  reply_parameters?: { message_id: number };
  message_id: number;
  at: number;
}

export interface FakeTelegram {
  /** The ApiBaseUrl to configure. */
  url: string;
  token: string;
  /** The bot's own user id (getMe). */
  botId: number;
  /** When true, getMe (and everything else) answers 401 as for an unknown token. */
  refuseToken: boolean;
  /** Adds an update; answers its update_id. */
  push(message: TelegramMessageInput): number;
  /** Every getUpdates call: its offset (undefined when none) and timeout, and the update ids it answered. */
  polls: { offset: number | undefined; timeout: number; answered: number[] }[];
  getMeCalls: number;
  /** getUpdates requests received (answered or still held). */
  pollsStarted: number;
  /** getUpdates requests being held now, and the most there ever were at once. */
  activePolls: number;
  maxActivePolls: number;
  sent: SentTelegramMessage[];
  /** Called with each message sendMessage accepted (a benchmark's signal), after it is in `sent`. */
  onSent?: (message: SentTelegramMessage) => void;
  /** 429 answers given to sendMessage, with when. */
  rateLimited: { at: number; retryAfter: number }[];
  /** The next sendMessage answers 429 with this retry_after. */
  rateLimitNextSend(retryAfterSeconds: number): void;
  /** Every request's socket is destroyed while on (held long polls at once). */
  setOutage(on: boolean): void;
  close(): Promise<void>;
}

interface Update {
  update_id: number;
  message: Record<string, unknown>;
}

export async function startFakeTelegram(token = "123456:TEST-fake-bot-token-abcdef"): Promise<FakeTelegram> {
  const updates: Update[] = [];
  let nextUpdateId = 1000;
  let nextMessageId = 1;
  let confirmedBelow = 0;
  let outage = false;
  let pendingRateLimit: number | undefined;
  const waiting = new Set<() => void>();
  const sockets = new Set<Socket>();

  const fake: FakeTelegram = {
    url: "",
    token,
    botId: 424242,
    refuseToken: false,
    polls: [],
    getMeCalls: 0,
    pollsStarted: 0,
    activePolls: 0,
    maxActivePolls: 0,
    sent: [],
    rateLimited: [],
    push(input) {
      const update_id = nextUpdateId++;
      const message: Record<string, unknown> = {
        message_id: nextMessageId++,
        date: Math.floor(Date.now() / 1000),
        chat: { id: input.chatId, type: "private" },
        from: { id: input.fromId, is_bot: input.isBot ?? false, first_name: "Tester" },
      };
      if (input.sticker) message.sticker = { file_id: "sticker-1", width: 512, height: 512 };
      else message.text = input.text ?? "";
      updates.push({ update_id, message });
      for (const wake of [...waiting]) wake();
      return update_id;
    },
    rateLimitNextSend(seconds) {
      pendingRateLimit = seconds;
    },
    setOutage(on) {
      outage = on;
      if (on) for (const socket of sockets) socket.destroy();
    },
    async close() {
      for (const wake of [...waiting]) wake();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const answer = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const refuse = (res: ServerResponse, status: number, description: string, extra: Record<string, unknown> = {}) =>
    answer(res, status, { ok: false, error_code: status, description, ...extra });

  async function paramsOf(req: IncomingMessage, url: URL): Promise<Record<string, unknown>> {
    const params: Record<string, unknown> = Object.fromEntries(url.searchParams);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    if (text === "") return params;
    if ((req.headers["content-type"] ?? "").includes("application/json")) return { ...params, ...JSON.parse(text) };
    return { ...params, ...Object.fromEntries(new URLSearchParams(text)) };
  }

  async function getUpdates(req: IncomingMessage, res: ServerResponse, params: Record<string, unknown>): Promise<void> {
    fake.pollsStarted++;
    fake.activePolls++;
    fake.maxActivePolls = Math.max(fake.maxActivePolls, fake.activePolls);
    try {
      await holdPoll(req, res, params);
    } finally {
      fake.activePolls--;
    }
  }

  async function holdPoll(req: IncomingMessage, res: ServerResponse, params: Record<string, unknown>): Promise<void> {
    const offset = params.offset === undefined ? undefined : Number(params.offset);
    const timeout = params.timeout === undefined ? 0 : Number(params.timeout);
    if (offset !== undefined) confirmedBelow = Math.max(confirmedBelow, offset);
    const pending = () => updates.filter((u) => u.update_id >= confirmedBelow);
    let ready = pending();
    if (ready.length === 0 && timeout > 0) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          waiting.delete(wake);
          req.socket.off("close", wake);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(wake, timeout * 1000);
        waiting.add(wake);
        req.socket.once("close", wake);
      });
      ready = pending();
    }
    if (res.destroyed || req.socket.destroyed) return;
    fake.polls.push({ offset, timeout, answered: ready.map((u) => u.update_id) });
    answer(res, 200, { ok: true, result: ready });
  }

  const server = createServer((req, res) => {
    if (outage) {
      req.socket.destroy();
      return;
    }
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    if (!match) return refuse(res, 404, "Not Found");
    if (match[1] !== token || fake.refuseToken) return refuse(res, 401, "Unauthorized");
    const method = match[2]!;
    paramsOf(req, url)
      .then(async (params) => {
        if (method === "getMe") {
          fake.getMeCalls++;
          return answer(res, 200, { ok: true, result: { id: fake.botId, is_bot: true, first_name: "Meshwork", username: "meshwork_bot" } });
        }
        if (method === "getUpdates") return getUpdates(req, res, params);
        if (method === "sendMessage") {
          if (pendingRateLimit !== undefined) {
            const retryAfter = pendingRateLimit;
            pendingRateLimit = undefined;
            fake.rateLimited.push({ at: Date.now(), retryAfter });
            return refuse(res, 429, `Too Many Requests: retry after ${retryAfter}`, { parameters: { retry_after: retryAfter } });
          }
          if (typeof params.text !== "string" || params.text === "") return refuse(res, 400, "Bad Request: message text is empty");
          if (params.text.length > 4096) return refuse(res, 400, "Bad Request: message is too long");
          if (params.chat_id === undefined) return refuse(res, 400, "Bad Request: chat not found");
          const message_id = nextMessageId++;
          const sent: SentTelegramMessage = {
            chat_id: params.chat_id as string | number,
            text: params.text,
            reply_parameters: params.reply_parameters as { message_id: number } | undefined,
            message_id,
            at: Date.now(),
          };
          fake.sent.push(sent);
          fake.onSent?.(sent);
          return answer(res, 200, {
            ok: true,
            result: { message_id, date: Math.floor(Date.now() / 1000), chat: { id: params.chat_id }, text: params.text },
          });
        }
        return refuse(res, 404, "Not Found: method not found");
      })
      .catch(() => {
        if (!res.headersSent) refuse(res, 400, "Bad Request: can't parse request");
      });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
