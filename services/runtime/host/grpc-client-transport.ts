// A connect-es Transport that speaks gRPC over one plain-text HTTP/2 connection (h2c, prior
// knowledge): how a gateway process reaches the service processes in the distributed mode. Unary
// and server-streaming calls (everything a REST front sends) go straight onto HTTP/2 streams;
// client- and bidi-streaming calls go through connect-node's gRPC transport. connect-node's client
// spent about 350 µs of CPU per unary call in the gateway (async-iterable pipes, a linked
// AbortController and a DOMException per call); this one frames the message, writes it, and
// reads the answer.
//
// What callers see is what any connect-es transport gives them: client interceptors around the
// call, response headers and trailers, ConnectErrors with code, message, details and metadata;
// the deadline travels as grpc-timeout and also ends the call here; an aborted signal resets the
// stream (the service sees the cancellation). A connection that cannot be made, or breaks, is
// Unavailable; the next call dials again. When the connection could not be made at all (refused,
// unreachable), no byte of the call left this process: the error says so (`neverSent`), and a
// caller with another address may safely send the call there (balanced-transport.ts).
import http2 from "node:http2";
import net from "node:net";
import { create, type DescMessage, type DescMethod, fromBinary, type Message, toBinary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  type Interceptor,
  type StreamResponse,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { errorFromTrailers, FrameReader, frame, grpcTimeoutHeader, http2Headers, PROTOCOL_HEADERS, webHeaders } from "./grpc-wire.js";

export interface GrpcClientTransportOptions {
  /** http://host:port of a service host. */
  readonly baseUrl: string;
  readonly interceptors?: readonly Interceptor[];
  /** Largest answer accepted, per message (default 4 MiB, as gRPC's own). */
  readonly readMaxBytes?: number;
}

type AnyFn = Parameters<Interceptor>[0];
type AnyRequest = Parameters<AnyFn>[0];

const DEFAULT_READ_MAX_BYTES = 4 * 1024 * 1024;

/** The cause of an Unavailable error whose call never left: no connection could be made. */
export class ConnectionFailed extends Error {
  override name = "ConnectionFailed";
}

/** Whether `error` is a call that failed before any of its bytes were sent (the connection was refused). */
export function neverSent(error: unknown): boolean {
  return error instanceof ConnectError && error.code === Code.Unavailable && error.cause instanceof ConnectionFailed;
}

export function createGrpcClientTransport(options: GrpcClientTransportOptions): Transport {
  const url = new URL(options.baseUrl);
  if (url.protocol !== "http:") throw new Error(`the gRPC client speaks h2c: ${options.baseUrl} is not an http:// address`);
  const interceptors = options.interceptors ?? [];
  const readMaxBytes = options.readMaxBytes ?? DEFAULT_READ_MAX_BYTES;
  const sessions = new SessionPool(url);
  // Client and bidi streams: rare, and never from a REST front.
  const fallback = createGrpcTransport({ baseUrl: options.baseUrl, interceptors: [...interceptors] });

  const wire = (req: AnyRequest, timeoutMs: number | undefined): Promise<UnaryResponse | StreamResponse> =>
    new Promise((resolve, reject) => {
      const call = new ClientCall(req, timeoutMs, readMaxBytes, resolve, reject);
      call.start(sessions);
    });

  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      const req = request(method, false, signal, header, contextValues, create(method.input, input));
      return (await applyInterceptors((r) => wire(r, effectiveTimeout(timeoutMs)), interceptors)(req)) as never;
    },
    async stream(method, signal, timeoutMs, header, input, contextValues) {
      if (method.methodKind !== "server_streaming") return fallback.stream(method, signal, timeoutMs, header, input, contextValues);
      const messages = (async function* () {
        for await (const message of input) yield create(method.input, message);
      })();
      const req = request(method, true, signal, header, contextValues, messages);
      return (await applyInterceptors((r) => wire(r, effectiveTimeout(timeoutMs)), interceptors)(req)) as never;
    },
  };
}

function effectiveTimeout(timeoutMs: number | undefined): number | undefined {
  return timeoutMs === undefined || timeoutMs <= 0 ? undefined : timeoutMs;
}

function request(
  method: DescMethod,
  stream: boolean,
  signal: AbortSignal | undefined,
  header: ConstructorParameters<typeof Headers>[0],
  contextValues: ReturnType<typeof createContextValues> | undefined,
  message: unknown,
): AnyRequest {
  return {
    stream,
    service: method.parent,
    method,
    requestMethod: "POST",
    url: `/${method.parent.typeName}/${method.name}`,
    header: new Headers(header),
    contextValues: contextValues ?? createContextValues(),
    signal: signal ?? new AbortController().signal,
    message,
  } as AnyRequest;
}

/** One HTTP/2 connection, dialled when first needed and again after it closes. */
class SessionPool {
  #session: http2.ClientHttp2Session | undefined;
  readonly #calls = new Map<http2.ClientHttp2Session, number>();
  /** Sessions whose connection was made: a call on one of the others sent nothing. */
  readonly #connected = new WeakSet<http2.ClientHttp2Session>();

  constructor(private readonly url: URL) {}

  get(): http2.ClientHttp2Session {
    const current = this.#session;
    if (current && !current.closed && !current.destroyed) return current;
    const { hostname, port } = this.url;
    const session = http2.connect(this.url.origin, {
      // No Nagle: a call's small frames leave at once.
      createConnection: () => net.connect({ host: hostname.replace(/^\[|\]$/g, ""), port: Number(port || 80), noDelay: true }),
    });
    // An idle connection does not keep the process alive; a call in flight does (hold/letGo).
    session.unref();
    session.on("error", () => {
      // Each open call sees its stream fail; the next call dials again.
    });
    session.once("connect", () => this.#connected.add(session));
    session.once("close", () => {
      if (this.#session === session) this.#session = undefined;
    });
    session.once("goaway", () => {
      if (this.#session === session) this.#session = undefined;
    });
    this.#session = session;
    return session;
  }

  connected(session: http2.ClientHttp2Session): boolean {
    return this.#connected.has(session);
  }

  /** A call is in flight on the session: the process waits for it, as it would for any request. */
  hold(session: http2.ClientHttp2Session): void {
    const calls = (this.#calls.get(session) ?? 0) + 1;
    this.#calls.set(session, calls);
    if (calls === 1) session.ref();
  }

  letGo(session: http2.ClientHttp2Session): void {
    const calls = (this.#calls.get(session) ?? 1) - 1;
    if (calls > 0) {
      this.#calls.set(session, calls);
      return;
    }
    this.#calls.delete(session);
    if (!session.destroyed) session.unref();
  }
}

class ClientCall {
  #stream: http2.ClientHttp2Stream | undefined;
  #sessions: SessionPool | undefined;
  #session: http2.ClientHttp2Session | undefined;
  #timer: NodeJS.Timeout | undefined;
  #settled = false;
  #status = 0;
  #header = new Headers();
  readonly #trailer = new Headers();
  readonly #reader: FrameReader;
  // Server streaming: messages not read yet, and the reader waiting for one.
  readonly #queue: Message[] = [];
  #waiting: { resolve: (r: IteratorResult<Message>) => void; reject: (e: unknown) => void } | undefined;
  #ended: ConnectError | null | undefined;
  #single: Message | undefined;
  #count = 0;

  constructor(
    private readonly req: AnyRequest,
    private readonly timeoutMs: number | undefined,
    readMaxBytes: number,
    private readonly resolve: (res: UnaryResponse | StreamResponse) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.#reader = new FrameReader(readMaxBytes);
  }

  start(sessions: SessionPool): void {
    const { req } = this;
    if (req.signal.aborted) {
      this.#fail(ConnectError.from(req.signal.reason, Code.Canceled));
      return;
    }
    // The caller's metadata, then the protocol's own headers (which no metadata may replace).
    const headers: http2.OutgoingHttpHeaders = http2Headers(req.header);
    headers[":method"] = "POST";
    headers[":path"] = req.url;
    headers["content-type"] = "application/grpc";
    headers.te = "trailers";
    if (this.timeoutMs !== undefined) {
      headers["grpc-timeout"] = grpcTimeoutHeader(this.timeoutMs);
      this.#timer = setTimeout(() => this.#cancel(new ConnectError("the operation timed out", Code.DeadlineExceeded)), this.timeoutMs);
    }
    req.signal.addEventListener("abort", this);
    let stream: http2.ClientHttp2Stream;
    let session: http2.ClientHttp2Session;
    try {
      session = sessions.get();
      stream = session.request(headers);
    } catch (error) {
      this.#fail(
        new ConnectError(
          `cannot reach ${req.url}: ${String(error)}`,
          Code.Unavailable,
          undefined,
          undefined,
          new ConnectionFailed(String(error)),
        ),
      );
      return;
    }
    this.#stream = stream;
    this.#sessions = sessions;
    this.#session = session;
    sessions.hold(session);
    stream.once("close", () => sessions.letGo(session));
    stream.on("response", (responseHeaders) => this.#onResponse(responseHeaders));
    stream.on("data", (chunk: Buffer) => this.#onData(chunk));
    stream.on("trailers", (trailers) => webHeaders(trailers, this.#trailer));
    stream.on("error", () => {
      // The close that follows settles the call.
    });
    stream.once("close", () => this.#onClose());
    void this.#send(stream);
  }

  handleEvent(): void {
    this.#cancel(ConnectError.from(this.req.signal.reason, Code.Canceled));
  }

  async #send(stream: http2.ClientHttp2Stream): Promise<void> {
    const { req } = this;
    try {
      if (!req.stream) {
        stream.end(frame(toBinary(req.method.input, (req as UnaryRequest).message as Message)));
        return;
      }
      let sent = 0;
      for await (const message of req.message as AsyncIterable<Message>) {
        if (++sent > 1) throw new ConnectError("a server-streaming call takes one request message", Code.InvalidArgument);
        stream.write(frame(toBinary(req.method.input, message)));
      }
      stream.end();
    } catch (error) {
      this.#cancel(ConnectError.from(error));
    }
  }

  #onResponse(headers: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader): void {
    this.#status = Number(headers[":status"]);
    webHeaders(headers, this.#header);
    // A trailers-only answer carries its status here; it is read when the stream closes.
    if (headers["grpc-status"] !== undefined) return;
    if (this.#status !== 200) return;
    if (this.req.stream) this.#respond();
  }

  #onData(chunk: Buffer): void {
    let messages: Uint8Array[];
    try {
      messages = this.#reader.push(chunk);
    } catch (error) {
      this.#cancel(ConnectError.from(error));
      return;
    }
    const output: DescMessage = this.req.method.output;
    for (const bytes of messages) {
      let message: Message;
      try {
        message = fromBinary(output, bytes);
      } catch (error) {
        this.#cancel(new ConnectError(`the answer is not a valid ${output.typeName}: ${String(error)}`, Code.Internal));
        return;
      }
      this.#count++;
      if (!this.req.stream) this.#single = message;
      else if (this.#waiting) {
        const waiting = this.#waiting;
        this.#waiting = undefined;
        waiting.resolve({ done: false, value: message });
      } else this.#queue.push(message);
    }
  }

  #onClose(): void {
    this.#release();
    if (this.#settled && this.#ended !== undefined) return;
    const statusSource = this.#trailer.has("grpc-status") ? this.#trailer : this.#header;
    let error: ConnectError | undefined;
    if (this.#status === 0) {
      // Requests wait in the session until it connects: on one that never did, nothing was sent.
      const neverConnected = this.#session !== undefined && this.#sessions?.connected(this.#session) === false;
      error = new ConnectError(
        `cannot reach the service at ${this.req.url}`,
        Code.Unavailable,
        undefined,
        undefined,
        neverConnected ? new ConnectionFailed("no connection could be made") : undefined,
      );
    } else {
      const merged = new Headers(statusSource);
      error = errorFromTrailers(merged, this.#status);
      if (error === undefined && this.#reader.partial)
        error = new ConnectError("protocol error: the answer ended inside a message", Code.Internal);
      if (error === undefined && !this.req.stream && this.#count !== 1) {
        error = new ConnectError(`protocol error: ${this.#count} answers to a unary call`, Code.Unimplemented);
      }
    }
    if (error) {
      // Response headers travel with the error, as connect-es transports put them.
      this.#header.forEach((value, key) => {
        if (!error!.metadata.has(key) && !key.startsWith("grpc-") && !PROTOCOL_HEADERS.has(key)) error!.metadata.set(key, value);
      });
    }
    this.#finish(error ?? null);
  }

  /** The caller gave up, or ran out of time: the stream is reset and the call fails with the reason. */
  #cancel(reason: ConnectError): void {
    if (this.#ended !== undefined) return;
    this.#finish(reason);
    this.#release();
    this.#stream?.close(http2.constants.NGHTTP2_CANCEL);
  }

  #finish(error: ConnectError | null): void {
    if (this.#ended !== undefined) return;
    this.#ended = error;
    if (!this.#settled) {
      if (error) {
        this.#fail(error);
        return;
      }
      if (!this.req.stream) {
        this.#respondUnary();
        return;
      }
      this.#respond();
    }
    // A stream already answered: its reader learns how it ended.
    if (this.#waiting && this.#queue.length === 0) {
      const waiting = this.#waiting;
      this.#waiting = undefined;
      if (error) waiting.reject(error);
      else waiting.resolve({ done: true, value: undefined });
    }
  }

  #respondUnary(): void {
    this.#settled = true;
    const res: UnaryResponse = {
      stream: false,
      service: this.req.service,
      method: this.req.method,
      header: withoutProtocol(this.#header),
      trailer: withoutProtocol(this.#trailer),
      message: this.#single as never,
    } as UnaryResponse;
    this.resolve(res);
  }

  #respond(): void {
    if (this.#settled) return;
    this.#settled = true;
    const res = {
      stream: true,
      service: this.req.service,
      method: this.req.method,
      header: withoutProtocol(this.#header),
      // Filled when the stream ends, as connect-es transports do.
      trailer: this.#trailer,
      message: { [Symbol.asyncIterator]: () => this.#iterator() },
    } as StreamResponse;
    this.resolve(res);
  }

  #iterator(): AsyncIterator<Message> {
    return {
      next: () => {
        const message = this.#queue.shift();
        if (message !== undefined) return Promise.resolve({ done: false, value: message });
        if (this.#ended === null) return Promise.resolve({ done: true, value: undefined });
        if (this.#ended) return Promise.reject(this.#ended);
        return new Promise((resolve, reject) => {
          this.#waiting = { resolve, reject };
        });
      },
      return: () => {
        this.#cancel(new ConnectError("the caller stopped reading the stream", Code.Canceled));
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }

  #fail(error: ConnectError): void {
    this.#settled = true;
    this.#ended ??= error;
    this.#release();
    this.reject(error);
  }

  #release(): void {
    clearTimeout(this.#timer);
    this.req.signal.removeEventListener("abort", this);
  }
}

function withoutProtocol(headers: Headers): Headers {
  const out = new Headers();
  headers.forEach((value, key) => {
    if (!PROTOCOL_HEADERS.has(key) && key !== "grpc-status" && key !== "grpc-message") out.set(key, value);
  });
  return out;
}

/** Like connect-es's applyInterceptors: the first interceptor is the outermost. */
function applyInterceptors(next: AnyFn, interceptors: readonly Interceptor[]): AnyFn {
  for (let i = interceptors.length - 1; i >= 0; i--) next = interceptors[i]!(next);
  return next;
}
