// One hub connection: the handshake, then the client's invocations as calls of the bound rpcs,
// the hub's push streams as client method calls, and the liveness bookkeeping the server's ticker
// reads (pings when quiet, a timeout when the client falls silent).
import { randomUUID } from "node:crypto";
import { create, fromJson, ScalarType, type JsonObject, type JsonValue, type Message, type Registry } from "@bufbuild/protobuf";
import { anyUnpack, type Any } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Transport } from "@connectrpc/connect";
import type { WebSocket } from "ws";
import { type HubClientCall, type HubClientCalls, HubClientCallsSchema } from "../../gen/meshwork/api/v1/hubs_pb.js";
import { HUB_CONNECTION_ID_HEADER, registerHubClient } from "../../services/runtime/hubs/client-results.js";
import { fromConnectError } from "../errors/from-connect-error.js";
import type { GatewayLogger } from "../logger.js";
import { reasonPhrase } from "../transcoder/status-codes.js";
import { messageJsonWriter } from "../transcoder/response-mapping.js";
import type { CompiledHub, HubMethodPlan } from "./hub-table.js";
import { HubWriter } from "./hub-writer.js";
import * as protocol from "./protocol.js";

/** The call metadata that names the hub connection to the service (client results find it by this id). */
export const HUB_CONNECTION_HEADER = HUB_CONNECTION_ID_HEADER;

export interface HubConnectionDeps {
  readonly hub: CompiledHub;
  readonly transport: Transport;
  readonly registry: Registry;
  readonly logger: GatewayLogger;
  /** What every call made for the connection carries (credentials, trace context, client address). */
  readonly headers: Readonly<Record<string, string>>;
  readonly connectionId: string;
  /** Writers for the packed arguments of client calls, shared by the front's connections. */
  readonly argumentWriters: Map<string, (message: Message) => JsonObject>;
  /** The server's clock for client silence (wall time less the time its event loop was held up). */
  readonly clock: () => number;
}

export class HubConnection {
  /** performance-free clock: Date.now() is enough for second-scale timeouts. */
  lastSent = Date.now();
  /** On deps.clock. */
  lastReceived: number;
  readonly openedAt = Date.now();
  handshaken = false;
  private closed = false;
  private buffered = "";
  private readonly invocations = new Map<string, AbortController>();
  private readonly pushes = new AbortController();
  private readonly writer: HubWriter;
  /** Client results: server-to-client invocations waiting for the client's Completion. */
  private readonly clientResults = new Map<string, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private clientResultIds = 0;
  private unregister?: () => void;

  constructor(
    readonly ws: WebSocket,
    private readonly deps: HubConnectionDeps,
    private readonly onClosed: (connection: HubConnection) => void,
  ) {
    this.writer = new HubWriter(ws);
    this.lastReceived = deps.clock();
    ws.on("message", (data, isBinary) => this.receive(data as Buffer, isBinary));
    ws.on("close", () => this.cleanUp());
    ws.on("error", () => this.cleanUp());
  }

  get id(): string {
    return this.deps.connectionId;
  }

  /** Ends the connection with a Close message carrying the error (if any), then the socket. */
  close(error?: string, allowReconnect = false): void {
    if (this.closed) return;
    if (this.handshaken) this.send(protocol.close(error, allowReconnect));
    this.writer.flush();
    this.ws.close(1000);
    this.cleanUp();
  }

  private cleanUp(): void {
    if (this.closed) return;
    this.closed = true;
    this.writer.discard();
    this.pushes.abort();
    this.unregister?.();
    for (const waiting of this.clientResults.values()) waiting.reject(new Error("the hub connection closed"));
    this.clientResults.clear();
    for (const abort of this.invocations.values()) abort.abort();
    this.invocations.clear();
    this.onClosed(this);
  }

  private send(text: string): void {
    if (this.closed) return;
    this.lastSent = Date.now();
    this.writer.write(text);
  }

  /** Sends, and when the socket is backed up, resolves once this message is written. */
  private sendPaced(text: string): Promise<void> | undefined {
    if (this.closed) return undefined;
    this.lastSent = Date.now();
    return this.writer.writePaced(text);
  }

  ping(): void {
    this.send(protocol.PING);
  }

  private receive(data: Buffer, isBinary: boolean): void {
    this.lastReceived = this.deps.clock();
    if (isBinary) {
      this.fail("Binary messages are not supported: this server speaks the 'json' protocol (text).");
      return;
    }
    const { records, rest } = protocol.splitRecords(this.buffered, data.toString("utf8"));
    this.buffered = rest;
    for (const record of records) {
      if (this.closed) return;
      if (!this.handshaken) this.handshake(record);
      else this.dispatch(record);
    }
  }

  private handshake(record: string): void {
    const outcome = protocol.readHandshake(record);
    if (!outcome.ok) {
      this.lastSent = Date.now();
      this.ws.send(protocol.handshakeError(outcome.error));
      this.ws.close(1000);
      this.cleanUp();
      return;
    }
    this.handshaken = true;
    this.send(protocol.HANDSHAKE_OK);
    this.unregister = registerHubClient(this.deps.connectionId, (target, args, signal) => this.callClient(target, args, signal));
    for (const method of this.deps.hub.push) void this.push(method);
  }

  /** A protocol violation: the connection ends with a Close message naming it. */
  private fail(error: string): void {
    this.close(`Connection closed with an error. ${error}`);
  }

  private dispatch(record: string): void {
    const message = protocol.readMessage(record);
    if (typeof message === "string") {
      this.fail(`InvalidDataException: ${message}.`);
      return;
    }
    switch (message.type) {
      case protocol.MessageType.Invocation:
      case protocol.MessageType.StreamInvocation:
        this.invoke(message, message.type === protocol.MessageType.StreamInvocation);
        return;
      case protocol.MessageType.CancelInvocation:
        if (message.invocationId !== undefined) {
          this.invocations.get(message.invocationId)?.abort();
          this.invocations.delete(message.invocationId);
        }
        return;
      case protocol.MessageType.Close:
        this.close();
        return;
      case protocol.MessageType.Completion: {
        // The answer to a client result this server asked for; others are dropped.
        const waiting = message.invocationId !== undefined ? this.clientResults.get(message.invocationId) : undefined;
        if (!waiting) return;
        this.clientResults.delete(message.invocationId!);
        const { error, result } = message as { error?: unknown; result?: unknown };
        if (typeof error === "string") waiting.reject(new Error(error));
        else waiting.resolve(result ?? null);
        return;
      }
      // Pings only keep the connection alive; stream items from the client (client streams) and
      // stateful-reconnect messages are not part of this server's subset, and are dropped as the
      // protocol asks of unknown messages.
      default:
        return;
    }
  }

  /** Invokes a client method and waits for its result (the client's Completion); rejects when the connection closes or `signal` aborts. */
  private callClient(target: string, args: readonly unknown[], signal?: AbortSignal): Promise<unknown> {
    if (this.closed) return Promise.reject(new Error("the hub connection closed"));
    const id = `server-${++this.clientResultIds}`;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.clientResults.delete(id);
        reject(new Error("the client result is no longer wanted"));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.clientResults.set(id, {
        resolve: (value) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(value);
        },
        reject: (error) => {
          signal?.removeEventListener("abort", onAbort);
          reject(error);
        },
      });
      this.send(
        `${JSON.stringify({ type: protocol.MessageType.Invocation, invocationId: id, target, arguments: args })}${protocol.RECORD_SEPARATOR}`,
      );
    });
  }

  private invoke(message: protocol.ClientMessage, streaming: boolean): void {
    const id = message.invocationId;
    const target = message.target ?? "";
    const answer = (outcome: Parameters<typeof protocol.completion>[1]) => {
      if (id !== undefined) this.send(protocol.completion(id, outcome));
    };
    if (streaming && id === undefined) {
      this.fail("InvalidDataException: a StreamInvocation needs an 'invocationId'.");
      return;
    }
    if (id !== undefined && this.invocations.has(id)) {
      this.fail(`Invocation ID '${id}' is already in use.`);
      return;
    }
    const plan = this.deps.hub.methods.get(target.toLowerCase());
    if (!plan) {
      answer({ error: `Unknown hub method '${target}'` });
      return;
    }
    if ((message.streamIds?.length ?? 0) > 0) {
      answer({ error: `Failed to invoke '${plan.name}': client-to-server streams are not supported.` });
      return;
    }
    if (plan.streaming !== streaming) {
      answer({
        error: streaming
          ? `The client attempted to invoke the non-streaming '${plan.name}' method with a streaming invocation.`
          : `The client attempted to invoke the streaming '${plan.name}' method with a non-streaming invocation.`,
      });
      return;
    }
    let input: Message;
    try {
      input = this.requestOf(plan, message.arguments ?? []);
    } catch (e) {
      answer({ error: e instanceof Error ? e.message : String(e) });
      return;
    }
    const abort = new AbortController();
    if (id !== undefined) this.invocations.set(id, abort);
    const run = streaming ? this.stream(plan, id!, input, abort) : this.unary(plan, id, input, abort);
    void run.finally(() => {
      if (id !== undefined && this.invocations.get(id) === abort) this.invocations.delete(id);
    });
  }

  private requestOf(plan: HubMethodPlan, args: readonly JsonValue[]): Message {
    if (args.length > plan.arguments.length) {
      throw new Error(
        `Failed to invoke '${plan.name}': invocation provides ${args.length} argument(s) but target expects ${plan.arguments.length}.`,
      );
    }
    const json: JsonObject = {};
    args.forEach((value, i) => {
      if (value !== null) json[plan.arguments[i]!.jsonName] = value;
    });
    try {
      return fromJson(plan.method.input, json, { registry: this.deps.registry });
    } catch {
      // Which argument: each alone, so the error names it.
      for (const [i, value] of args.entries()) {
        if (value === null) continue;
        const field = plan.arguments[i]!;
        try {
          fromJson(plan.method.input, { [field.jsonName]: value }, { registry: this.deps.registry });
        } catch {
          throw new Error(`Bad Request: argument ${i + 1} (${field.jsonName}) of '${plan.name}' is not a valid ${describeField(field)}.`);
        }
      }
      throw new Error(`Bad Request: the arguments of '${plan.name}' do not make a valid request.`);
    }
  }

  private callHeaders(): Record<string, string> {
    return { ...this.deps.headers, "x-request-id": randomUUID(), [HUB_CONNECTION_HEADER]: this.deps.connectionId };
  }

  private async unary(plan: HubMethodPlan, id: string | undefined, input: Message, abort: AbortController): Promise<void> {
    try {
      const response = await this.deps.transport.unary(plan.method as never, abort.signal, undefined, this.callHeaders(), input);
      if (id !== undefined && !abort.signal.aborted) this.send(protocol.completion(id, { result: plan.toJson(response.message) }));
    } catch (e) {
      if (abort.signal.aborted) return;
      if (id !== undefined) this.send(protocol.completion(id, { error: this.errorText(plan.label, e) }));
    }
  }

  private async stream(plan: HubMethodPlan, id: string, input: Message, abort: AbortController): Promise<void> {
    try {
      const streamItem = protocol.streamItemWriter(id);
      const response = await this.deps.transport.stream(plan.method as never, abort.signal, undefined, this.callHeaders(), single(input));
      for await (const message of response.message) {
        if (abort.signal.aborted) break;
        let records = "";
        for (const item of plan.itemsOf(message as Message)) records += streamItem(itemJson(plan, item));
        if (records === "") continue;
        const paced = this.sendPaced(records);
        if (paced) await paced;
      }
      // A cancelled invocation gets no completion: the client has forgotten it already.
      if (!abort.signal.aborted) this.send(protocol.completion(id, undefined));
    } catch (e) {
      if (abort.signal.aborted) return;
      this.send(protocol.completion(id, { error: this.errorText(plan.label, e) }));
    }
  }

  private async push(method: CompiledHub["push"][number]): Promise<void> {
    const signal = this.pushes.signal;
    try {
      const response = await this.deps.transport.stream(
        method as never,
        signal,
        undefined,
        this.callHeaders(),
        single(create(method.input)),
      );
      for await (const message of response.message) {
        if (signal.aborted) break;
        const text = this.pushedText(method.name, message as HubClientCall | HubClientCalls);
        if (text === "") continue;
        const paced = this.sendPaced(text);
        if (paced) await paced;
      }
    } catch (e) {
      if (signal.aborted) return;
      this.close(this.errorText(`${method.parent.typeName}/${method.name}`, e));
    }
  }

  /** The Invocations of a push stream's answer: one call, or several (HubClientCalls) in order. */
  private pushedText(rpc: string, message: HubClientCall | HubClientCalls): string {
    if (message.$typeName !== HubClientCallsSchema.typeName) return this.clientCallText(rpc, message);
    // A frozen run (one instance handed to every connection) is rendered once for all of them.
    const cache = Object.isFrozen(message) ? renderedFor(this.deps.hub) : undefined;
    let text = cache?.get(message);
    if (text === undefined) {
      text = "";
      for (const call of message.calls) text += this.clientCallText(rpc, call);
      cache?.set(message, text);
    }
    return text;
  }

  /** A frozen call (one instance handed to every connection) is rendered once for all of them. */
  private clientCallText(rpc: string, call: HubClientCall): string {
    if (call.method === "") throw new ConnectError(`${rpc} yielded a HubClientCall without a method`, Code.Internal);
    const frozen = Object.isFrozen(call);
    const cache = frozen ? renderedFor(this.deps.hub) : undefined;
    const known = cache?.get(call);
    if (known !== undefined) return known;
    const text = protocol.invocation(
      call.method,
      call.arguments.map((a) => this.argumentJson(a)),
    );
    cache?.set(call, text);
    return text;
  }

  private argumentJson(any: Any): JsonValue {
    const { registry, hub, argumentWriters } = this.deps;
    const message = anyUnpack(any, registry);
    if (!message) throw new ConnectError(`a client call argument of type ${any.typeUrl} is unknown to this front`, Code.Internal);
    let write = argumentWriters.get(message.$typeName);
    if (!write) {
      write = messageJsonWriter(registry.getMessage(message.$typeName)!, hub.style, registry);
      argumentWriters.set(message.$typeName, write);
    }
    return write(message);
  }

  /** A failed call as the Completion's error: the HTTP reason phrase, then what the client may see. */
  private errorText(label: string, reason: unknown): string {
    const error = fromConnectError(reason, this.deps.hub.style.failedPreconditionStatus);
    if (error.status >= 500) {
      const fields = { rpc: label, hub: this.deps.hub.path, connectionId: this.id, status: error.status, err: errorMessage(reason) };
      if (error.status === 503) this.deps.logger.warn(fields, "hub call failed: service unavailable");
      else this.deps.logger.error(fields, "hub call failed");
    }
    const phrase = reasonPhrase(error.status);
    return error.detail === "" ? phrase : `${phrase}: ${error.detail}`;
  }
}

// Messages a service hands, frozen, to many connections at once (a fanned-out event): rendered once
// per method (items) or per hub (client calls), since each renders in its own service's style.
const rendered = new WeakMap<object, WeakMap<Message, string>>();

function renderedFor(owner: object): WeakMap<Message, string> {
  let cache = rendered.get(owner);
  if (cache === undefined) rendered.set(owner, (cache = new WeakMap()));
  return cache;
}

function itemJson(plan: HubMethodPlan, message: Message): string {
  if (!Object.isFrozen(message)) return JSON.stringify(plan.toJson(message));
  const cache = renderedFor(plan);
  let text = cache.get(message);
  if (text === undefined) cache.set(message, (text = JSON.stringify(plan.toJson(message))));
  return text;
}

function describeField(field: HubMethodPlan["arguments"][number]): string {
  if (field.fieldKind === "scalar")
    return field.scalar === ScalarType.STRING ? "string" : field.scalar === ScalarType.BOOL ? "boolean" : "number";
  if (field.fieldKind === "enum") return `${field.enum.name} value`;
  if (field.fieldKind === "message") return field.message.typeName.startsWith("google.protobuf.") ? field.message.name : "object";
  return field.fieldKind === "list" ? "array" : "object";
}

function errorMessage(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason);
}

async function* single(message: Message) {
  yield message;
}
