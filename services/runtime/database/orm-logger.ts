// Routes MikroORM's own log lines into the process logger at a matching level instead of stdout.
import { DefaultLogger, type LogContext, type LoggerNamespace, type LoggerOptions } from "@mikro-orm/core";
import type { Logger } from "./types.js";

export class OrmLogger extends DefaultLogger {
  constructor(
    options: LoggerOptions,
    private readonly target: Logger,
  ) {
    super(options);
  }

  override log(namespace: LoggerNamespace | (string & {}), message: string, context?: LogContext): void {
    if (!this.isEnabled(namespace as LoggerNamespace, context)) return;
    let text = message.replace(/\n/g, " ").replace(/ +/g, " ").trim();
    // With Database debug on, MikroORM writes each statement with its values inlined; string
    // literals (names, payloads, secrets) are blanked, the statement's shape stays.
    if (namespace === "query" || namespace === "query-params" || context?.level === "error") text = blankStringLiterals(text);
    const fields = { namespace, ...(context?.took !== undefined ? { tookMs: context.took } : {}) };
    if (context?.level === "error") this.target.error(fields, text);
    else if (context?.level === "warning" || namespace === "deprecated") this.target.warn(fields, text);
    else if (namespace === "query" || namespace === "query-params") this.target.debug(fields, text);
    else this.target.info(fields, text);
  }
}

function blankStringLiterals(text: string): string {
  return text.replace(/'(?:[^']|'')*'/g, "'…'");
}
