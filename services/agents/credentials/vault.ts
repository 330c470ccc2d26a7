// A client of HashiCorp Vault's KV version 2 secrets engine, just what the credential store needs.
// A credential `name` is the secret `{prefix}/{name}` of the engine mounted at `mount`, its value the
// secret's field `value`:
//   read    GET    {addr}/v1/{mount}/data/{prefix}/{name}          → 200 { data: { data: { value } } }, 404 none
//   write   POST   {addr}/v1/{mount}/data/{prefix}/{name}          { data: { value } } (a new version)
//   list    GET    {addr}/v1/{mount}/metadata/{prefix}/?list=true  → 200 { data: { keys } }, 404 none
//   remove  GET, then DELETE {addr}/v1/{mount}/metadata/{prefix}/{name} (every version and the metadata)
// every request with `X-Vault-Token`. The list is Vault's LIST endpoint called as `GET ?list=true`,
// which Vault documents as equivalent and which its own Go client sends "for broader compatibility"
// (proxies that refuse an unknown method). A 404 with an empty `errors` is "no such secret"; with a
// message it is a path no engine answers (a wrong mount), an error. Errors name Vault and its
// origin, never the token, a credential's name or its value.
import { VaultError } from "./errors.js";
import { CREDENTIAL_NAME } from "./errors.js";

export interface VaultOptions {
  /** `APP_VAULT_ADDR`: `http(s)://host:port`, optionally with a base path. */
  addr: string;
  /** `APP_VAULT_TOKEN`. */
  token: string;
  /** `APP_VAULT_MOUNT`, default `secret`. */
  mount?: string;
  /** `APP_VAULT_PREFIX`: the folder under the mount holding the credentials, default none. */
  prefix?: string;
  /** How long one request may take (default 5000 ms); past it Vault counts as down. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

interface VaultAnswer {
  status: number;
  body: Record<string, unknown> | undefined;
}

const segments = (path: string) =>
  path
    .split("/")
    .filter((s) => s !== "")
    .map(encodeURIComponent);

export class VaultKv2Client {
  readonly origin: string;
  readonly mount: string;
  readonly #base: string;
  readonly #token: string;
  readonly #folder: string[];
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: VaultOptions) {
    const url = new URL(options.addr);
    this.origin = url.origin;
    this.#base = `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
    // A header cannot carry it, and the HTTP client's error would quote it: refused here, unquoted.
    if (!/^[\x21-\x7e]+$/.test(options.token)) {
      throw new VaultError("the Vault token (APP_VAULT_TOKEN) is empty or holds characters an HTTP header cannot carry");
    }
    this.#token = options.token;
    this.mount = segments(options.mount ?? "secret").join("/") || "secret";
    this.#folder = segments(options.prefix ?? "");
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#fetch = options.fetch ?? fetch;
  }

  #url(kind: "data" | "metadata", name?: string): string {
    const path = [...this.#folder, ...(name === undefined ? [] : [encodeURIComponent(name)])].join("/");
    return `${this.#base}/v1/${this.mount}/${kind}/${path}`;
  }

  async get(name: string): Promise<string | undefined> {
    const answer = await this.#request("GET", this.#url("data", name), "reading a credential");
    if (answer.status === 404) return undefined;
    this.#expect(answer, [200], "reading a credential");
    const data = (answer.body?.data as { data?: Record<string, unknown> } | undefined)?.data;
    const value = data?.value;
    if (typeof value !== "string") {
      throw new VaultError(`Vault at ${this.origin} holds the secret without a string field 'value'`, answer.status);
    }
    return value;
  }

  async set(name: string, value: string): Promise<void> {
    const answer = await this.#request("POST", this.#url("data", name), "writing a credential", { data: { value } });
    this.#expect(answer, [200, 204], "writing a credential");
  }

  /** Deletes every version and the metadata; true when the secret existed. */
  async remove(name: string): Promise<boolean> {
    const url = this.#url("metadata", name);
    const exists = await this.#request("GET", url, "removing a credential");
    if (exists.status === 404) return false;
    this.#expect(exists, [200], "removing a credential");
    const answer = await this.#request("DELETE", url, "removing a credential");
    this.#expect(answer, [200, 204], "removing a credential");
    return true;
  }

  /** The names under the prefix; sub-folders and keys that are no credential name are left out. */
  async list(): Promise<string[]> {
    const answer = await this.#request("GET", `${this.#url("metadata")}${this.#folder.length ? "/" : ""}?list=true`, "listing credentials");
    if (answer.status === 404) return [];
    this.#expect(answer, [200], "listing credentials");
    const keys = (answer.body?.data as { keys?: unknown } | undefined)?.keys;
    if (!Array.isArray(keys)) throw new VaultError(`Vault at ${this.origin} answered a list without data.keys`, answer.status);
    return keys.filter((k): k is string => typeof k === "string" && CREDENTIAL_NAME.test(k));
  }

  async #request(method: string, url: string, what: string, body?: unknown): Promise<VaultAnswer> {
    const headers: Record<string, string> = { "X-Vault-Token": this.#token, "X-Vault-Request": "true" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.#timeoutMs),
        // A standby node of an HA cluster answers 307 towards the active one, as Vault's clients expect.
        redirect: "follow",
      });
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; name?: string; errors?: { code?: string }[] } };
      if (e.name === "TimeoutError" || e.name === "AbortError") {
        throw new VaultError(`Vault at ${this.origin} did not answer within ${this.#timeoutMs} ms while ${what}`);
      }
      const cause = e.cause?.code ?? e.cause?.errors?.[0]?.code ?? e.cause?.name ?? e.name;
      throw new VaultError(`Vault at ${this.origin} is unreachable (${cause}) while ${what}`);
    }
    let text: string;
    try {
      text = await response.text();
    } catch {
      throw new VaultError(`Vault at ${this.origin} broke off its answer while ${what}`, response.status);
    }
    let parsed: Record<string, unknown> | undefined;
    try {
      const value: unknown = text === "" ? undefined : JSON.parse(text);
      if (value && typeof value === "object" && !Array.isArray(value)) parsed = value as Record<string, unknown>;
    } catch {
      // Not JSON (a proxy's page): judged by the status alone. JSON.parse's message would quote it.
    }
    const errors = Array.isArray(parsed?.errors) ? parsed.errors : [];
    if (response.status === 404 && errors.length > 0) {
      // "no handler for route ...": nothing is mounted there (the text itself quotes the path: not shown).
      throw new VaultError(
        `Vault at ${this.origin} has no KV v2 engine answering at mount '${this.mount}' (404) while ${what}; check APP_VAULT_MOUNT`,
        404,
      );
    }
    return { status: response.status, body: parsed };
  }

  #expect(answer: VaultAnswer, ok: number[], what: string): void {
    if (ok.includes(answer.status)) return;
    const status = answer.status;
    if (status === 401 || status === 403) {
      throw new VaultError(
        `Vault at ${this.origin} refused the token (${status}) while ${what}; check APP_VAULT_TOKEN and its policy`,
        status,
      );
    }
    if (status === 503) {
      const errors = Array.isArray(answer.body?.errors) ? answer.body.errors : [];
      const sealed = errors.some((e) => typeof e === "string" && /sealed/i.test(e));
      throw new VaultError(`Vault at ${this.origin} is unavailable (503${sealed ? ", sealed" : ""}) while ${what}`, status);
    }
    throw new VaultError(`Vault at ${this.origin} answered HTTP ${status} while ${what}`, status);
  }
}
