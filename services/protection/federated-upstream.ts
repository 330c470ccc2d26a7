// The upstream worker (only when Protection:Federated:Upstream is set): every
// Protection:Federated:UpstreamIntervalSeconds it posts the agent reports not yet sent, at most
// 500 per call, to `<upstream>/v1/federated/reports` with Protection:Federated:UpstreamApiKey:
// each report is its domain, report_type (the reason) and confidence 0.5, nothing else (no
// account, device or context). Network errors, 429 and 5xx leave the reports for the next tick;
// any other answer is logged and the reports are dropped. Rows are claimed with `skip locked`,
// so two instances never send the same report.
import type { EntityManager } from "@mikro-orm/postgresql";
import type { UnitOfWork } from "../runtime/outbox/index.js";
import { FEDERATED_BATCH_MAX } from "./federation-service.js";

interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

const POST_TIMEOUT_MS = 30_000;
const AGENT_CONFIDENCE = 0.5;

function sql<T = Record<string, unknown>>(em: EntityManager, text: string, params: unknown[] = []): Promise<T[]> {
  return em.getConnection().execute<T[]>(text, params, "all", em.getTransactionContext());
}

type Outcome = "sent" | "dropped" | "retry" | "empty";

export function startFederatedUpstream(
  deps: { uow: UnitOfWork; logger: Logger },
  options: { upstream: string; apiKey: string; intervalSeconds: number },
) {
  const { uow, logger } = deps;
  const target = new URL("v1/federated/reports", options.upstream.endsWith("/") ? options.upstream : `${options.upstream}/`);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = false;

  /** One call of at most 500 reports, in a transaction that holds its rows until it knows. */
  const sendBatch = (): Promise<{ outcome: Outcome; count: number }> =>
    uow.run(async (tx) => {
      const rows = await sql<{ id: string; domain: string; reason: string }>(
        tx.em,
        `select "id", "domain", "reason" from "protection_blocklist_report" where "upstream_sent_at" is null
         order by "created_at", "id" limit ${FEDERATED_BATCH_MAX} for update skip locked`,
      );
      if (rows.length === 0) return { outcome: "empty" as Outcome, count: 0 };
      const body = JSON.stringify({
        api_key: options.apiKey,
        reports: rows.map((r) => ({ domain: r.domain, report_type: r.reason, confidence: AGENT_CONFIDENCE })),
      });
      let status: number;
      try {
        const res = await fetch(target, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json" },
          body,
          signal: AbortSignal.timeout(POST_TIMEOUT_MS),
        });
        await res.arrayBuffer();
        status = res.status;
      } catch (err) {
        logger.warn(
          { upstream: target.origin, reports: rows.length, err: err instanceof Error ? err.message : String(err) },
          "federated upstream unreachable; the reports are sent next interval",
        );
        return { outcome: "retry" as Outcome, count: rows.length };
      }
      if (status === 429 || status >= 500) {
        logger.warn(
          { upstream: target.origin, status, reports: rows.length },
          "federated upstream busy; the reports are sent next interval",
        );
        return { outcome: "retry" as Outcome, count: rows.length };
      }
      const ok = status >= 200 && status < 300;
      if (!ok)
        logger.warn({ upstream: target.origin, status, reports: rows.length }, "federated upstream refused the reports; they are dropped");
      await sql(tx.em, `update "protection_blocklist_report" set "upstream_sent_at" = ? where "id" = any(?::uuid[])`, [
        new Date(),
        `{${rows.map((r) => r.id).join(",")}}`,
      ]);
      return { outcome: (ok ? "sent" : "dropped") as Outcome, count: rows.length };
    });

  async function tick(): Promise<void> {
    for (;;) {
      if (stopped) return;
      const { outcome, count } = await sendBatch();
      if (outcome === "sent") logger.info({ upstream: target.origin, reports: count }, "agent reports sent upstream");
      if (outcome === "retry" || outcome === "empty" || count < FEDERATED_BATCH_MAX) return;
    }
  }

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick()
        .catch((err) => logger.warn({ err: err instanceof Error ? err.message : String(err) }, "federated upstream tick failed"))
        .finally(() => {
          running = undefined;
          schedule();
        });
    }, options.intervalSeconds * 1000);
    timer.unref();
  };
  schedule();

  return {
    target: target.origin,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
