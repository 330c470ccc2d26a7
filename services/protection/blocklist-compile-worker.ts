// The blocklist compile worker: every Protection:Blocklist:CompileIntervalSeconds it publishes a
// new version when the entries changed. A tick that finds another instance compiling skips (that
// one publishes); a failed tick is logged and the next one tries again.
import type { BlocklistVersions } from "./blocklist-versions.js";

interface Logger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export function startCompileWorker(blocklist: BlocklistVersions, intervalSeconds: number, logger: Logger) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const tick = async () => {
    try {
      const result = await blocklist.compileIfIdle();
      if (result?.compiled) {
        logger.info({ version: result.version, added: result.added_count, removed: result.removed_count }, "blocklist compiled");
      }
    } catch (err) {
      logger.error({ err: err instanceof Error ? err.message : String(err) }, "blocklist compilation failed; retrying next interval");
    }
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick().finally(() => {
        running = undefined;
        schedule();
      });
    }, intervalSeconds * 1000);
    timer.unref();
  };
  schedule();

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
