// The providers a turn may use, ordered by Priority (lower first, 100 by default): the chosen
// provider with the chosen model first, then the others by priority, each with its own default
// model (its first). A provider that fails is skipped until a probe (`models()`, every
// ProviderProbeSeconds) succeeds; turns then return to it. Also what GET /api/providers and the
// providers health entry show. Never holds or shows a key: clients resolve their own credentials.
import type { LoggerLike } from "../../runtime/logging/index.js";
import { AllProvidersFailedError, ProviderCancelledError, ProviderError } from "./errors.js";
import type { ChatDelta, ChatMessage, ChatResult, ProviderClient, ProviderKind, RetryInfo, ToolDefinition } from "./types.js";

export interface PooledProvider {
  client: ProviderClient & { close?(): void };
  /** `Providers:<name>:Models`; the first is the provider's default. */
  models: string[];
  /** `Providers:<name>:Priority`, lower first (default 100). */
  priority?: number;
}

export interface ProviderPoolOptions {
  providers: PooledProvider[];
  /** `Gateway:Agents:DefaultProvider`; unset, the first available provider by priority. */
  defaultProvider?: string;
  /** `AgentGateway:ProviderProbeSeconds` × 1000 (30 s). */
  probeIntervalMs?: number;
  /** How long one probe may take (10 s). */
  probeTimeoutMs?: number;
  logger?: Pick<LoggerLike, "info" | "warn">;
}

/** A row of GET /api/providers. */
export interface ProviderStatus {
  name: string;
  kind: ProviderKind;
  models: string[];
  available: boolean;
  isDefault: boolean;
}

export interface PoolChatRequest {
  /** The agent's provider; unset, the default provider. */
  provider?: string;
  /** The agent's model; unset, the provider's default. Used with the chosen provider only. */
  model?: string;
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  signal?: AbortSignal;
}

export interface PoolDelta extends ChatDelta {
  provider: string;
}

export interface PoolChatOptions {
  onRetry?: (provider: string, info: RetryInfo) => void;
  /** A provider failed and the next is tried (its deltas, if any, were already delivered). */
  onFallback?: (failure: ProviderError, next: string) => void;
}

export interface PoolChatResult extends ChatResult {
  /** The provider that answered and the model it was asked for. */
  provider: string;
  requestedModel: string;
  /** The providers that failed before it, in order. */
  failures: ProviderError[];
}

interface Entry {
  name: string;
  provider: PooledProvider;
  priority: number;
  available: boolean;
}

export class ProviderPool {
  #entries: Entry[] = [];
  #defaultProvider: string | undefined;
  readonly #probeIntervalMs: number;
  readonly #probeTimeoutMs: number;
  readonly #logger: Pick<LoggerLike, "info" | "warn"> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #probing: Promise<void> | undefined;

  constructor(options: ProviderPoolOptions) {
    this.#probeIntervalMs = options.probeIntervalMs ?? 30_000;
    this.#probeTimeoutMs = options.probeTimeoutMs ?? 10_000;
    this.#logger = options.logger;
    this.replace(options.providers, options.defaultProvider);
  }

  /** New provider settings (hot reload): providers keep their availability by name; clients no longer used are closed. */
  replace(providers: PooledProvider[], defaultProvider?: string): void {
    const before = new Map(this.#entries.map((e) => [e.name, e]));
    const names = new Set<string>();
    for (const p of providers) {
      if (names.has(p.client.name)) throw new RangeError(`provider ${p.client.name} is configured twice`);
      if (p.models.length === 0) throw new RangeError(`provider ${p.client.name} lists no model`);
      names.add(p.client.name);
    }
    this.#entries = providers
      .map((provider) => ({
        name: provider.client.name,
        provider,
        priority: provider.priority ?? 100,
        available: before.get(provider.client.name)?.available ?? true,
      }))
      .sort((a, b) => a.priority - b.priority);
    for (const old of before.values()) {
      if (!providers.some((p) => p.client === old.provider.client)) old.provider.client.close?.();
    }
    this.#defaultProvider = defaultProvider;
  }

  /** What GET /api/providers answers, by priority. */
  list(): ProviderStatus[] {
    const fallback = this.defaultChoice()?.provider;
    return this.#entries.map((e) => ({
      name: e.name,
      kind: e.provider.client.kind,
      models: [...e.provider.models],
      available: e.available,
      isDefault: e.name === fallback,
    }));
  }

  /** DefaultProvider when it names a provider, else the first available by priority (the first at all when none is). */
  defaultChoice(): { provider: string; model: string } | undefined {
    const entry = this.#entries.find((e) => e.name === this.#defaultProvider) ?? this.#entries.find((e) => e.available) ?? this.#entries[0];
    return entry ? { provider: entry.name, model: entry.provider.models[0]! } : undefined;
  }

  /** The models a provider lists (undefined: no such provider), to check a spawn's choice. */
  modelsOf(name: string): string[] | undefined {
    const entry = this.#entries.find((e) => e.name === name);
    return entry ? [...entry.provider.models] : undefined;
  }

  isAvailable(name: string): boolean {
    return this.#entries.find((e) => e.name === name)?.available ?? false;
  }

  /** One chat completion: the chosen provider, then the others by priority; providers waiting for a probe are skipped. */
  async chat(request: PoolChatRequest, onDelta?: (delta: PoolDelta) => void, options: PoolChatOptions = {}): Promise<PoolChatResult> {
    const chosenName = request.provider ?? this.defaultChoice()?.provider;
    const chosen = this.#entries.find((e) => e.name === chosenName);
    if (!chosen) throw new RangeError(`unknown provider ${chosenName ?? "(none configured)"}`);
    const order = [chosen, ...this.#entries.filter((e) => e !== chosen)];
    const failures: ProviderError[] = [];
    const candidates = order.filter((e) => e.available);
    const skipped = order.filter((e) => !e.available).map((e) => e.name);
    for (const [i, entry] of candidates.entries()) {
      const model = entry === chosen && request.model ? request.model : entry.provider.models[0]!;
      try {
        const result = await entry.provider.client.chat(
          { model, messages: request.messages, tools: request.tools, signal: request.signal },
          onDelta && ((delta) => onDelta({ ...delta, provider: entry.name })),
          { onRetry: options.onRetry && ((info) => options.onRetry?.(entry.name, info)) },
        );
        return { ...result, provider: entry.name, requestedModel: model, failures };
      } catch (error) {
        if (error instanceof ProviderCancelledError || !(error instanceof ProviderError)) throw error;
        failures.push(error);
        this.#markUnavailable(entry, error);
        const next = candidates[i + 1];
        if (next) options.onFallback?.(error, next.name);
      }
    }
    throw new AllProvidersFailedError(failures, skipped);
  }

  /** Probes every provider once (`models()`): a success makes it available, a failure unavailable. Rounds never overlap. */
  probe(): Promise<void> {
    this.#probing ??= Promise.all(this.#entries.map((entry) => this.#probeOne(entry))).then(
      () => {
        this.#probing = undefined;
      },
      () => {
        this.#probing = undefined;
      },
    );
    return this.#probing;
  }

  async #probeOne(entry: Entry): Promise<void> {
    try {
      await entry.provider.client.models(AbortSignal.timeout(this.#probeTimeoutMs));
      if (!entry.available) this.#logger?.info({ provider: entry.name }, "provider available again");
      entry.available = true;
    } catch (error) {
      const failure =
        error instanceof ProviderError ? error : new ProviderError(entry.name, "unreachable", `provider ${entry.name}: probe failed`);
      this.#markUnavailable(entry, failure);
    }
  }

  #markUnavailable(entry: Entry, error: ProviderError): void {
    if (entry.available) {
      this.#logger?.warn(
        { provider: entry.name, reason: error.reason, status: error.status, attempts: error.attempts },
        "provider failed; skipped until a probe succeeds",
      );
    }
    entry.available = false;
  }

  /** Probes now and every probeIntervalMs until stop(). */
  start(): void {
    if (this.#timer) return;
    void this.probe();
    this.#timer = setInterval(() => void this.probe(), this.#probeIntervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#probing;
  }

  /** Stops probing and closes every client's connections. */
  async close(): Promise<void> {
    await this.stop();
    for (const entry of this.#entries) entry.provider.client.close?.();
  }
}
