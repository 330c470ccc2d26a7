// A connect-es Transport over several addresses of one service (`Services:<Name>:Address` given as
// a comma-separated list): each call goes to the next address in turn (round-robin). An address
// whose connection was refused (the call never left: see neverSent) is skipped for a while (5 s),
// and the call is sent once more, to the next address. Any other failure is the call's answer:
// a call that may have reached a service is never sent twice. Server streams pick their address
// per call too, and are retried only when the stream never started; client and bidi streams
// (whose input cannot be replayed) pick an address and are not retried.
//
// When every address is being skipped the rotation tries them anyway, so a service that comes back
// is reached at once (and a single address behaves as it always did).
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Transport } from "@connectrpc/connect";
import { neverSent } from "./grpc-client-transport.js";

export interface BalancedTransportOptions {
  /** The service's addresses (http://host:port), at least one. */
  readonly addresses: readonly string[];
  /** The transport to one address (a gRPC client transport). */
  readonly transportFor: (address: string) => Transport;
  /** How long a refusing address is skipped, in ms (default 5000). */
  readonly skipMs?: number;
  /** The clock, in ms (tests move it instead of waiting). */
  readonly now?: () => number;
  /** Whether a failed call never reached its address, so it can go to another (default: neverSent). */
  readonly refused?: (error: unknown) => boolean;
  /** Told when an address starts being skipped (for a log line). */
  readonly onSkip?: (address: string, error: unknown) => void;
}

export const DEFAULT_SKIP_MS = 5_000;

/** The addresses of a comma-separated setting value (checked by the setting itself). */
export function splitAddresses(value: string): string[] {
  return value
    .split(",")
    .map((address) => address.trim())
    .filter((address) => address !== "");
}

export function createBalancedTransport(options: BalancedTransportOptions): Transport {
  const { addresses } = options;
  if (addresses.length === 0) throw new Error("a balanced transport needs at least one address");
  const transports = addresses.map((address) => options.transportFor(address));
  if (transports.length === 1) return transports[0]!;
  const skipMs = options.skipMs ?? DEFAULT_SKIP_MS;
  const now = options.now ?? Date.now;
  const refused = options.refused ?? neverSent;
  const skippedUntil = addresses.map(() => Number.NEGATIVE_INFINITY);
  let next = 0;

  /** The next address in turn that is not being skipped (or, all being skipped, the next one); never `except`. */
  function pick(except?: number): number | undefined {
    const at = now();
    const candidates: number[] = [];
    for (let i = 0; i < addresses.length; i++) {
      const index = (next + i) % addresses.length;
      if (index !== except) candidates.push(index);
    }
    const chosen = candidates.find((index) => skippedUntil[index]! <= at) ?? candidates[0];
    if (chosen !== undefined) next = (chosen + 1) % addresses.length;
    return chosen;
  }

  function skip(index: number, error: unknown): void {
    const at = now();
    if (skippedUntil[index]! <= at) options.onSkip?.(addresses[index]!, error);
    skippedUntil[index] = at + skipMs;
  }

  /** One call: sent to the next address, and once more to the one after if the first refused it. */
  async function call<T>(
    send: (transport: Transport, timeoutMs: number | undefined) => Promise<T>,
    timeoutMs: number | undefined,
  ): Promise<T> {
    const started = performance.now();
    const first = pick()!;
    try {
      return await send(transports[first]!, timeoutMs);
    } catch (error) {
      if (!refused(error)) throw error;
      skip(first, error);
      const second = pick(first);
      if (second === undefined) throw error;
      // The retry keeps the caller's deadline: what is left of it.
      const left = timeoutMs === undefined || timeoutMs <= 0 ? timeoutMs : Math.max(1, timeoutMs - (performance.now() - started));
      try {
        return await send(transports[second]!, left);
      } catch (again) {
        if (refused(again)) skip(second, again);
        throw again;
      }
    }
  }

  return {
    unary(method, signal, timeoutMs, header, input, contextValues) {
      return call((transport, timeout) => transport.unary(method, signal, timeout, header, input, contextValues), timeoutMs);
    },
    async stream(method, signal, timeoutMs, header, input, contextValues) {
      if (method.methodKind !== "server_streaming") {
        const index = pick()!;
        try {
          return await transports[index]!.stream(method, signal, timeoutMs, header, input, contextValues);
        } catch (error) {
          if (refused(error)) skip(index, error);
          throw error;
        }
      }
      // A server stream's one request, kept so that a retry can send it again.
      const messages: MessageInitShape<typeof method.input>[] = [];
      for await (const message of input) messages.push(message);
      return call((transport, timeout) => transport.stream(method, signal, timeout, header, replay(messages), contextValues), timeoutMs);
    },
  };
}

async function* replay<T>(items: readonly T[]): AsyncIterable<T> {
  yield* items;
}
