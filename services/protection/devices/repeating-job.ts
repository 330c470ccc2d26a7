// A background job that runs, sleeps for the delay it answers, and runs again; woken early on
// demand; stopped by waiting for the run in progress. A failed run is logged and retried later.
import type { Logger } from "pino";

export interface RepeatingJob {
  /** Run as soon as possible (e.g. a new deadline exists). */
  wake(): void;
  stop(): Promise<void>;
}

export function repeatingJob(options: {
  name: string;
  logger: Logger;
  /** One run; answers how long to wait before the next, in ms. */
  run(): Promise<number>;
  /** The wait after a failed run. */
  retryMs: number;
}): RepeatingJob {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  let again = false;

  const schedule = (ms: number) => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(tick, Math.max(0, ms));
    timer.unref?.();
  };

  function tick(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      let next = options.retryMs;
      try {
        next = await options.run();
      } catch (err) {
        options.logger.warn({ err, job: options.name }, "background job failed; retrying");
      }
      running = undefined;
      if (again) {
        again = false;
        next = 0;
      }
      schedule(next);
    })();
  }

  schedule(0);
  return {
    wake: () => schedule(0),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
