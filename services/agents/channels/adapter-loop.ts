// The lifecycle every platform adapter shares: connect runs the platform handshake and then starts
// one background loop (a long poll, an event stream, a socket); disconnect stops it and waits for
// it to end. Both are idempotent, and a connect racing another starts one loop.
export interface AdapterLoop {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
}

export function adapterLoop(handshake: () => Promise<void>, run: (signal: AbortSignal) => Promise<void>): AdapterLoop {
  let running: { stop: AbortController; loop: Promise<void> } | undefined;
  return {
    async connect() {
      if (running) return;
      await handshake();
      if (running) return;
      const stop = new AbortController();
      running = { stop, loop: run(stop.signal) };
    },
    async disconnect() {
      const current = running;
      running = undefined;
      if (!current) return;
      current.stop.abort();
      await current.loop;
    },
  };
}
