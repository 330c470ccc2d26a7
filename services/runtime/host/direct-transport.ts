// An in-process connect-es Transport: calls the registered service implementations directly, with
// no serialization or envelopes, behind the same server interceptors the service host runs.
import { clone, create, toBinary, type DescMessage, type DescMethod, type Message } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  createMethodImplSpec,
  createServiceImplSpec,
  type ConnectRouter,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
  type ServiceImpl,
  type StreamRequest,
  type StreamResponse,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { setMaxListeners } from "node:events";
import type { ServiceRegistration } from "./service-registration.js";

/** A routes function (what buildRoutes returns, or any `(router) => void`), or bare registrations. */
export type DirectTransportSource = ((router: ConnectRouter) => void) | readonly ServiceRegistration[];

export interface DirectTransportOptions {
  /** Client-side interceptors, as on any transport (outermost first). */
  readonly interceptors?: readonly Interceptor[];
  /**
   * Server interceptors for services registered without their own, like the router-level
   * `createConnectRouter({ interceptors })`. buildRoutes gives each service its own, which win.
   */
  readonly serverInterceptors?: readonly Interceptor[];
  /** Deadline of calls that bring none, in milliseconds. */
  readonly defaultTimeoutMs?: number;
  /** Aborts every running call, as the service host's shutdown signal does. */
  readonly shutdownSignal?: AbortSignal;
  /**
   * Copy request messages and headers on the way in, and responses and their headers on the way
   * out (default true), so neither side can reach into the other's objects. A caller that builds
   * every request afresh, never touches it after the call, and only reads what comes back (the
   * REST gateway, which serializes the answer at once) can turn this off and spare each call the
   * copies.
   */
  readonly defensiveCopies?: boolean;
}

type AnyFn = Parameters<Interceptor>[0];
type AnyRequest = UnaryRequest | StreamRequest;
type Writable<T> = { -readonly [K in keyof T]: T[K] };

interface Binding {
  readonly spec: MethodImplSpec;
  readonly interceptors: readonly Interceptor[];
  readonly url: string;
  /** See DirectTransportOptions.defensiveCopies. */
  readonly copies: boolean;
}

/**
 * A response as the caller gets it: a copy, unless the handler froze it. A frozen message (its
 * producer freezes every level it shares, as the event stream hub does for the batches it hands
 * to every client) cannot be changed by either side, so one instance can go to every caller;
 * copying it for each of a thousand stream clients was most of a fan-out's CPU.
 */
function copyOut<T extends Message>(schema: DescMessage, message: T): T {
  return Object.isFrozen(message) ? message : (clone(schema, message as never) as T);
}

const PROTOCOL_NAME = "connect";
const REQUEST_METHOD = "POST";
const BASE_URL = "http://in-process";

// Handler signals fire when a call ends, as in connect-es. A shared reason spares each call a
// DOMException and its stack trace.
const CALL_ENDED = new DOMException("the call has ended", "AbortError");

/**
 * A Transport that runs calls in this process against the implementations `source` registers.
 *
 * What a caller sees is what the network gives it: request headers reach ctx.requestHeader;
 * response headers and trailers come back; failures arrive as fresh ConnectErrors (details
 * re-encoded, so findDetails works; anything but a ConnectError becomes Internal "internal
 * error"); deadlines and abort signals end the call at once, whether or not the handler watches
 * its signal; streams of every kind work. Messages are copied with protobuf-es `clone` on the way
 * in and out (a few microseconds for a small message; a response the handler froze is passed as is, see
 * copyOut), because without a wire in between a handler that kept or changed its request, or a
 * caller that changed a response, would reach into the other side's objects. A caller that never
 * does either can turn the copies off (defensiveCopies).
 *
 * Differences from a network call, on purpose: the handler runs inside the caller's async context
 * (AsyncLocalStorage stores flow in; Meshwork's server interceptors set their own request id and
 * span, so that is invisible to them); no protocol headers (content-type, connect-timeout-ms,
 * user-agent) are added; values a wire would reject (an int32 set to 1.5, a string holding lone
 * surrogates) pass through unchecked; router options other than interceptors and shutdownSignal
 * (read limits, compression, JSON options) have no meaning here and are ignored.
 */
export function createDirectTransport(source: DirectTransportSource, options: DirectTransportOptions = {}): Transport {
  const bindings = collectBindings(source, options.serverInterceptors ?? [], options.defensiveCopies ?? true);
  const clientInterceptors = options.interceptors ?? [];
  const shutdownSignal = options.shutdownSignal;
  if (shutdownSignal) {
    // One listener per running call: many is normal, not a leak.
    setMaxListeners(0, shutdownSignal);
  }
  const byMethod = new WeakMap<DescMethod, Binding>();
  const bindingOf = (method: DescMethod): Binding => {
    let binding = byMethod.get(method);
    if (binding === undefined) {
      // By name, so a descriptor loaded separately (another registry, reflection) still matches.
      binding = bindings.get(keyOf(method));
      if (binding === undefined) {
        throw new ConnectError(`${keyOf(method)} is not served in this process`, Code.Unimplemented);
      }
      byMethod.set(method, binding);
    }
    return binding;
  };
  const timeoutOf = (timeoutMs: number | undefined): number | undefined => {
    // As connect-es transports have it: undefined takes the default, zero or less means none.
    const effective = timeoutMs ?? options.defaultTimeoutMs;
    return effective === undefined || effective <= 0 ? undefined : effective;
  };

  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      const call = new Call(signal, timeoutOf(timeoutMs), shutdownSignal);
      const req = clientRequest(call, method, false, new Headers(header), contextValues, create(method.input, input));
      try {
        // The innermost client step is the "wire": it crosses to the server side of the call
        // (an unknown method fails there, so client interceptors see it as they would a 404).
        const res = await applyInterceptors(
          (wireReq) => call.race(wireReq, serveUnary(bindingOf(method), wireReq as UnaryRequest, call)),
          clientInterceptors,
        )(req);
        call.done();
        return res as UnaryResponse as never;
      } catch (error) {
        throw call.fail(error);
      }
    },

    async stream(method, signal, timeoutMs, header, input, contextValues) {
      const call = new Call(signal, timeoutOf(timeoutMs), shutdownSignal);
      // A call that ends early tells the caller's request stream, so a generator can clean up.
      call.onAbort = () => void closeIterable(input);
      const messages = mapIterable(input as AsyncIterable<unknown>, (value) => create(method.input, value as never) as Message);
      const req = clientRequest(call, method, true, new Headers(header), contextValues, messages);
      let res: StreamResponse;
      try {
        res = (await applyInterceptors(
          (wireReq) => call.race(wireReq, serveStream(bindingOf(method), wireReq as StreamRequest, call)),
          clientInterceptors,
        )(req)) as StreamResponse;
      } catch (error) {
        throw call.fail(error);
      }
      // The server's own stream, untouched by client interceptors, settles the call itself: one
      // layer less on every message.
      if (selfSettling.has(res.message)) {
        call.settledByStream = true;
        return res as never;
      }
      return { ...res, message: settleCallWith(res.message, call) } as never;
    },
  };
}

/** Every method `source` registers, as the transport would serve it. */
export function servedMethods(source: DirectTransportSource): DescMethod[] {
  return [...collectBindings(source, [], false).values()].map((binding) => binding.spec.method);
}

function keyOf(method: DescMethod): string {
  return `${method.parent.typeName}/${method.name}`;
}

/** Registers nothing for HTTP: a router that only records which implementation serves which method. */
function collectBindings(source: DirectTransportSource, defaults: readonly Interceptor[], copies: boolean): Map<string, Binding> {
  const bindings = new Map<string, Binding>();
  const add = (spec: MethodImplSpec, interceptors: readonly Interceptor[] | undefined): void => {
    // The last registration wins, as in the router's path lookup.
    const key = keyOf(spec.method);
    bindings.set(key, { spec, interceptors: interceptors ?? defaults, url: `${BASE_URL}/${key}`, copies });
  };
  if (typeof source === "function") {
    const router = {
      handlers: [],
      service(service, impl, options) {
        for (const spec of Object.values(createServiceImplSpec(service, impl).methods)) {
          add(spec, options?.interceptors);
        }
        return router;
      },
      rpc(method, impl, options) {
        add(createMethodImplSpec(method, impl) as MethodImplSpec, options?.interceptors);
        return router;
      },
    } as ConnectRouter;
    source(router);
  } else {
    for (const { service, impl } of source as readonly ServiceRegistration[]) {
      for (const spec of Object.values(createServiceImplSpec(service, impl as Partial<ServiceImpl<typeof service>>).methods)) {
        add(spec, undefined);
      }
    }
  }
  return bindings;
}

/**
 * An AbortSignal made only when someone reads it. Most calls end without anyone looking at their
 * signal, and an AbortController with its abort event costs several microseconds per call.
 */
class LazySignal {
  #controller: AbortController | undefined;
  ended = false;
  reason: unknown;

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.ended) this.#controller.abort(this.reason);
    }
    return this.#controller.signal;
  }

  /** The signal if it was made, without making it. */
  get made(): AbortSignal | undefined {
    return this.#controller?.signal;
  }

  end(reason: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.reason = reason;
    this.#controller?.abort(reason);
  }
}

/**
 * One call, both sides. The caller's side (`client`, the signal client interceptors see) ends when
 * the answer is in, or when the caller aborts or the deadline passes; the service's side
 * (`server`, the handler's signal) ends when the handler is done, or with the caller's abort.
 * It listens to the caller's signals itself (handleEvent), so a call costs no closures for that.
 */
class Call {
  readonly client = new LazySignal();
  readonly server = new LazySignal();
  /** Epoch milliseconds, when the call has a deadline. */
  readonly deadline: number | undefined;
  /** Runs once if the call is aborted (by the caller or the deadline). */
  onAbort: (() => void) | undefined;
  /** The server's stream ends the caller's side itself, as settleCallWith would (see stream()). */
  settledByStream = false;
  readonly #listening: AbortSignal[] = [];
  readonly #shutdown: AbortSignal | undefined;
  #timer: NodeJS.Timeout | undefined;
  #timedOut: ConnectError | undefined;
  #reject: ((reason: unknown) => void) | undefined;

  constructor(callerSignal: AbortSignal | undefined, timeoutMs: number | undefined, shutdown: AbortSignal | undefined) {
    if (timeoutMs !== undefined) {
      this.deadline = Date.now() + timeoutMs;
      this.#timer = setTimeout(deadlinePassed, timeoutMs, this);
    }
    this.#shutdown = shutdown;
    if (shutdown !== undefined) this.listen(shutdown);
    if (callerSignal !== undefined) this.listen(callerSignal);
  }

  listen(signal: AbortSignal): void {
    if (this.client.ended || signal === this.client.made) return;
    if (signal.aborted) {
      this.#abortBy(signal);
      return;
    }
    signal.addEventListener("abort", this);
    this.#listening.push(signal);
  }

  handleEvent(event: Event): void {
    this.#abortBy(event.target as AbortSignal);
  }

  #abortBy(signal: AbortSignal): void {
    // The service host's shutdown stops handlers; the caller then hears what the handler says.
    if (signal === this.#shutdown) this.server.end(ownReason(signal.reason));
    else this.abort(signal.reason);
  }

  timeout(): void {
    this.#timedOut = new ConnectError("the operation timed out", Code.DeadlineExceeded);
    this.abort(this.#timedOut);
  }

  /** The caller gave up (or ran out of time): both sides learn at once, the caller stops waiting. */
  abort(reason: unknown): void {
    if (this.client.ended) return;
    this.client.end(reason);
    this.server.end(ownReason(reason));
    this.#reject?.(reason);
    this.onAbort?.();
  }

  /**
   * Crosses the wire: settles with the server's work, or rejects with the caller's reason as soon
   * as the caller aborts, whether or not the handler watches its signal.
   */
  race<T>(wireReq: AnyRequest, work: () => Promise<T>): Promise<T> {
    // A client interceptor may have put its own signal on the request; that one counts too.
    const descriptor = Object.getOwnPropertyDescriptor(wireReq, "signal");
    if (descriptor !== undefined && descriptor.get === undefined) this.listen(wireReq.signal);
    // A call aborted before it left never reaches the service, as no request would be sent.
    if (this.client.ended) return Promise.reject(this.client.reason as Error);
    return new Promise<T>((resolve, reject) => {
      this.#reject = reject;
      work().then(resolve, reject);
    });
  }

  done(): void {
    this.#release();
    this.client.end(CALL_ENDED);
  }

  /** Ends the call and gives the error the caller sees (the deadline's, if it passed). */
  fail(reason: unknown): ConnectError {
    const error = ConnectError.from(this.#timedOut ?? reason);
    this.#release();
    if (!this.client.ended) {
      this.client.end(error);
      this.server.end(ownReason(error));
      this.onAbort?.();
    }
    return error;
  }

  #release(): void {
    clearTimeout(this.#timer);
    for (const signal of this.#listening) signal.removeEventListener("abort", this);
    this.#listening.length = 0;
    this.#reject = undefined;
  }
}

function deadlinePassed(call: Call): void {
  call.timeout();
}

/**
 * The server side's own copy of a ConnectError abort reason (a deadline, a shutdown): server
 * interceptors stamp the errors they see (x-request-id), and the caller's must stay the caller's.
 */
function ownReason(reason: unknown): unknown {
  return reason instanceof ConnectError
    ? new ConnectError(reason.rawMessage, reason.code, reason.metadata, undefined, reason.cause)
    : reason;
}

/** A request as client interceptors see it; `signal` is made when first read. */
function clientRequest(
  call: Call,
  method: DescMethod,
  stream: boolean,
  header: Headers,
  contextValues: ContextValues | undefined,
  message: unknown,
): AnyRequest {
  return {
    stream,
    service: method.parent,
    method,
    requestMethod: REQUEST_METHOD,
    url: `${BASE_URL}/${keyOf(method)}`,
    header,
    contextValues: contextValues ?? createContextValues(),
    message,
    get signal() {
      return call.client.signal;
    },
  } as AnyRequest;
}

/** The same request as the service sees it: its own headers and context values, its own signal. */
function serverRequest(call: Call, binding: Binding, stream: boolean, header: Headers, message: unknown): AnyRequest {
  const method = binding.spec.method;
  return {
    stream,
    service: method.parent,
    method,
    requestMethod: REQUEST_METHOD,
    url: binding.url,
    // Its own copy, as a server parses its own from the wire.
    header: binding.copies ? new Headers(header) : header,
    contextValues: createContextValues(),
    message,
    get signal() {
      return call.server.signal;
    },
  } as AnyRequest;
}

/** What the implementation gets: the call's context, with whatever the interceptors changed on the request. */
function handlerContext(call: Call, binding: Binding, req: AnyRequest, responseHeader: Headers, responseTrailer: Headers): HandlerContext {
  const deadline = call.deadline;
  return {
    method: binding.spec.method,
    service: req.service,
    get signal() {
      return req.signal;
    },
    timeoutMs() {
      return deadline === undefined ? undefined : deadline - Date.now();
    },
    requestMethod: REQUEST_METHOD,
    requestHeader: req.header,
    responseHeader,
    responseTrailer,
    protocolName: PROTOCOL_NAME,
    values: req.contextValues,
    url: binding.url,
  };
}

function serveUnary(binding: Binding, wireReq: UnaryRequest, call: Call): () => Promise<UnaryResponse> {
  return async () => {
    const { spec } = binding;
    if (spec.kind !== "unary") {
      throw new ConnectError(`${keyOf(spec.method)} is a ${spec.kind.replace("_", "-")} method`, Code.Unimplemented);
    }
    const method = spec.method;
    const responseHeader = new Headers();
    const responseTrailer = new Headers();
    try {
      const message = binding.copies ? clone(method.input, wireReq.message) : wireReq.message;
      const req = serverRequest(call, binding, false, wireReq.header, message);
      const res = (await applyInterceptors(async (handlerReq) => {
        const ctx = handlerContext(call, binding, handlerReq, responseHeader, responseTrailer);
        const output = await spec.impl((handlerReq as UnaryRequest).message as never, ctx);
        const res: Writable<UnaryResponse> = {
          stream: false,
          service: method.parent,
          method,
          header: responseHeader,
          trailer: responseTrailer,
          message: create(method.output, output),
        };
        return res;
      }, binding.interceptors)(req)) as UnaryResponse;
      call.server.end(CALL_ENDED);
      if (!binding.copies) return res;
      const answer: Writable<UnaryResponse> = {
        stream: false,
        service: method.parent,
        method,
        header: new Headers(res.header),
        trailer: new Headers(res.trailer),
        message: copyOut(method.output, res.message),
      };
      return answer;
    } catch (error) {
      call.server.end(error);
      throw wireError(error, responseHeader, responseTrailer, false);
    }
  };
}

function serveStream(binding: Binding, wireReq: StreamRequest, call: Call): () => Promise<StreamResponse> {
  return async () => {
    const { spec } = binding;
    if (spec.kind === "unary") {
      throw new ConnectError(`${keyOf(spec.method)} is a unary method`, Code.Unimplemented);
    }
    const method = spec.method;
    let responseHeader = new Headers();
    let responseTrailer = new Headers();
    const input = binding.copies ? mapIterable(wireReq.message, (message) => clone(method.input, message)) : wireReq.message;
    const invoke: AnyFn = async (req) => {
      const ctx = handlerContext(call, binding, req, responseHeader, responseTrailer);
      const requests = req.message as AsyncIterable<Message>;
      let output: AsyncIterable<unknown>;
      switch (spec.kind) {
        case "server_streaming":
          output = spec.impl((await single(requests, "server-streaming")) as never, ctx);
          break;
        case "client_streaming":
          output = once(() => spec.impl(requests as never, ctx));
          break;
        default:
          output = spec.impl(requests as never, ctx);
          break;
      }
      const res: Writable<StreamResponse> = {
        stream: true,
        service: method.parent,
        method,
        header: responseHeader,
        trailer: responseTrailer,
        message: mapIterable(output, (value) => create(method.output, value as never) as Message),
      };
      return res;
    };

    // As over the network, the response (and its headers) is ready when the first message, the
    // end or a failure is: the handler may add headers until it yields for the first time.
    let source: AsyncIterator<Message> | undefined;
    let first: IteratorResult<Message> | undefined;
    let failure: { error: unknown } | undefined;
    try {
      const req = serverRequest(call, binding, true, wireReq.header, input);
      const res = (await applyInterceptors(invoke, binding.interceptors)(req)) as StreamResponse;
      responseHeader = res.header;
      responseTrailer = res.trailer;
      source = res.message[Symbol.asyncIterator]();
      first = await source.next();
    } catch (error) {
      failure = { error };
    }
    const header = new Headers(responseHeader);
    const trailer = new Headers();
    let finished = false;
    const finish = (reason: unknown): void => {
      finished = true;
      call.server.end(reason);
      // Lets an abandoned handler run its finally blocks; it may be parked on a slow await.
      source?.return?.().catch(() => {});
    };
    const fail = (error: unknown): never => {
      finish(error);
      // Cut off by the caller's abort or deadline: that reason is the answer, as with any transport.
      const thrown = call.client.ended ? call.client.reason : wireError(error, header, responseTrailer, true);
      throw call.settledByStream ? call.fail(thrown) : thrown;
    };
    const received = (result: IteratorResult<Message>): IteratorResult<Message> => {
      if (result.done === true) {
        responseTrailer.forEach((value, key) => trailer.set(key, value));
        finished = true;
        call.server.end(CALL_ENDED);
        if (call.settledByStream) call.done();
        return result;
      }
      return { done: false, value: binding.copies ? copyOut(method.output, result.value) : result.value };
    };
    const messages: AsyncIterator<Message> = {
      async next() {
        if (finished) {
          if (call.settledByStream) call.done();
          return { done: true, value: undefined };
        }
        if (failure) return fail(failure.error);
        if (first) {
          const result = first;
          first = undefined;
          return received(result);
        }
        try {
          return received(await call.race(wireReq, () => source!.next()));
        } catch (error) {
          return fail(error);
        }
      },
      async return() {
        if (call.settledByStream) call.fail(new ConnectError("the caller stopped reading the stream", Code.Canceled));
        if (!finished) finish(new ConnectError("the caller stopped reading the stream", Code.Canceled));
        return { done: true, value: undefined };
      },
    };
    const res: Writable<StreamResponse> = {
      stream: true,
      service: method.parent,
      method,
      header,
      trailer,
      message: { [Symbol.asyncIterator]: () => messages },
    };
    selfSettling.add(res.message);
    return res;
  };
}

/** Streams serveStream made, which can settle the caller's call themselves. */
const selfSettling = new WeakSet<AsyncIterable<unknown>>();

/** Ends the caller's call with its stream: done when it is read to the end, failed when it throws. */
function settleCallWith<T>(source: AsyncIterable<T>, call: Call): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const it = source[Symbol.asyncIterator]();
      return {
        async next() {
          try {
            const result = await it.next();
            if (result.done === true) call.done();
            return result;
          } catch (error) {
            throw call.fail(error);
          }
        },
        async return(value?: unknown) {
          // The caller stopped reading (break, or its loop threw): the call is cancelled.
          call.fail(new ConnectError("the caller stopped reading the stream", Code.Canceled));
          return (await it.return?.(value)) ?? { done: true, value: undefined };
        },
      };
    },
  };
}

/**
 * What the caller receives for a failed call: a new ConnectError built from the server's, as the
 * wire would carry it — code, message, details (as encoded Any), and as metadata the response
 * headers, the error's own metadata and the trailers. Anything else is Internal "internal error".
 * The server's error object never reaches the caller, so neither side can change the other's.
 */
function wireError(error: unknown, header: Headers, trailer: Headers, stream: boolean): ConnectError {
  const served = error instanceof ConnectError ? error : new ConnectError("internal error", Code.Internal, undefined, undefined, error);
  let metadata: Headers;
  if (stream) {
    // A stream's error travels in its end message with the trailers; the client then appends the
    // response headers (so an id in both reads "id, id", as any Connect client shows it).
    metadata = new Headers(trailer);
    served.metadata.forEach((value, key) => metadata.append(key, value));
    header.forEach((value, key) => metadata.append(key, value));
  } else {
    // A unary error's metadata goes out as response headers, then the trailers are appended.
    metadata = new Headers(header);
    served.metadata.forEach((value, key) => metadata.set(key, value));
    trailer.forEach((value, key) => metadata.append(key, value));
  }
  const received = new ConnectError(served.rawMessage, served.code, metadata);
  for (const detail of served.details) {
    received.details.push(
      "desc" in detail
        ? { type: detail.desc.typeName, value: toBinary(detail.desc, create(detail.desc, detail.value)) }
        : { type: detail.type, value: detail.value.slice(), debug: detail.debug },
    );
  }
  return received;
}

/** Like connect-es's applyInterceptors: the first interceptor is the outermost. */
function applyInterceptors(next: AnyFn, interceptors: readonly Interceptor[]): AnyFn {
  for (let i = interceptors.length - 1; i >= 0; i--) {
    next = interceptors[i]!(next);
  }
  return next;
}

function mapIterable<T, U>(source: AsyncIterable<T>, map: (value: T) => U): AsyncIterable<U> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<U> {
      const it = source[Symbol.asyncIterator]();
      const mapped: AsyncIterator<U> = {
        async next() {
          const result = await it.next();
          return result.done === true ? result : { done: false, value: map(result.value) };
        },
      };
      if (it.return) {
        mapped.return = async (value?: unknown) => {
          const result = await it.return!(value);
          return result.done === true ? result : { done: false, value: map(result.value) };
        };
      }
      return mapped;
    },
  };
}

async function closeIterable(source: AsyncIterable<unknown>): Promise<void> {
  try {
    await source[Symbol.asyncIterator]().return?.();
  } catch {
    // Its own business: the call is over either way.
  }
}

/** The one request of a server-streaming call; zero or two are a protocol error, as on the wire. */
async function single<T>(source: AsyncIterable<T>, kind: string): Promise<T> {
  const it = source[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done === true) {
    throw new ConnectError(`protocol error: missing input message for ${kind} method`, Code.Unimplemented);
  }
  const second = await it.next();
  if (second.done !== true) {
    throw new ConnectError(`protocol error: received extra input message for ${kind} method`, Code.Unimplemented);
  }
  return first.value;
}

/** A client-streaming answer as a one-message stream, so every streaming kind flows the same way. */
async function* once<T>(produce: () => Promise<T>): AsyncGenerator<T> {
  yield await produce();
}
