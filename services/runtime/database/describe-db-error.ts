// What may be said about a failed database call without repeating what was sent to it. MikroORM
// prefixes a driver error's message with the statement, bound values inlined, and PostgreSQL's
// `detail` repeats the offending row ("Key (name)=(...) already exists"); neither may reach a
// log line, an answer or an error another service sees. Duck-typed on purpose: loggers use this
// without loading the ORM.

export interface DbErrorDescription {
  /** `DatabaseError`, `UniqueConstraintViolationException`, `KnexTimeoutError`, ... */
  readonly type: string;
  /** SQLSTATE (`23505`) or the socket error code (`ECONNREFUSED`), when there is one. */
  readonly sqlState?: string;
  /** The statement's kind and table (`insert into "orders_order"`), never its values. */
  readonly statement?: string;
  readonly table?: string;
  readonly constraint?: string;
  /** PostgreSQL's primary message with quoted literals blanked out. */
  readonly message: string;
  /** The database could not be reached or refused work for now: worth a retry, not a bug. */
  readonly unavailable: boolean;
}

interface ErrorLike {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  sqlState?: unknown;
  table?: unknown;
  constraint?: unknown;
  severity?: unknown;
  routine?: unknown;
  cause?: unknown;
}

const SQLSTATE = /^[0-9A-Z]{5}$/;
// Socket-level failures on the way to the server.
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);
// 57P01 admin shutdown / terminated backend, 57P02 crash shutdown, 57P03 cannot connect now
// (starting up, shutting down), 53300 too many connections; and work the server gave up on this
// time but would do on a retry: 40001 serialization failure, 40P01 deadlock, 55P03 lock not
// available, 57014 statement timeout. None is the caller's mistake or a bug: 503 with Retry-After.
const UNAVAILABLE_STATES = new Set(["57P01", "57P02", "57P03", "53300", "40001", "40P01", "55P03", "57014"]);
// Class 08 is "connection exception", except 08P01 (protocol violation): that one is what the
// server answers to a NUL byte in a bound value, a bad request rather than an outage.
const NOT_UNAVAILABLE_STATES = new Set(["08P01"]);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|Timeout acquiring a connection|Client has encountered a connection error|the database system is (?:starting up|shutting down|in recovery mode)|Connection ended unexpectedly|connection is closed|not queryable/i;
const DRIVER_NAMES = /^(?:DatabaseError|KnexTimeoutError|DriverException)$|Exception$/;
const STATEMENT =
  /^\s*(?:with\s+[\s\S]*?\)\s*)?(insert\s+into|update|delete\s+from|select|merge\s+into|alter\s+table|create\s+\w+|drop\s+\w+|truncate|lock\s+table|call)\b\s*(?:[\s\S]*?\bfrom\s+)?("[^"]+"(?:\."[^"]+")?|[\w.]+)?/i;

function isErrorLike(value: unknown): value is ErrorLike {
  return typeof value === "object" && value !== null;
}

function codeOf(err: ErrorLike): string | undefined {
  const code = err.code ?? err.sqlState;
  return typeof code === "string" ? code : undefined;
}

/** Whether an error came from the database driver or pool (not from a handler's own checks). */
export function isDbError(error: unknown): boolean {
  if (!isErrorLike(error)) return false;
  const code = codeOf(error);
  if (code !== undefined && SQLSTATE.test(code) && (typeof error.severity === "string" || typeof error.routine === "string")) return true;
  const name = typeof error.name === "string" ? error.name : "";
  if (DRIVER_NAMES.test(name) && name !== "Exception") return true;
  const message = typeof error.message === "string" ? error.message : "";
  return UNAVAILABLE_MESSAGES.test(message) && (code === undefined || NETWORK_CODES.has(code));
}

function isUnavailable(err: ErrorLike, depth = 0): boolean {
  const code = codeOf(err);
  if (code !== undefined) {
    if (NETWORK_CODES.has(code) || UNAVAILABLE_STATES.has(code)) return true;
    if (SQLSTATE.test(code) && code.startsWith("08") && !NOT_UNAVAILABLE_STATES.has(code)) return true;
    if (SQLSTATE.test(code)) return false;
  }
  if (err.name === "KnexTimeoutError") return true;
  if (typeof err.message === "string" && UNAVAILABLE_MESSAGES.test(err.message)) return true;
  return depth < 4 && isErrorLike(err.cause) && isUnavailable(err.cause, depth + 1);
}

/** Whether the database is out of reach for now: an outage, answered Unavailable, not Internal. */
export function isDatabaseUnavailable(error: unknown): boolean {
  return isErrorLike(error) && isDbError(error) && isUnavailable(error);
}

/** Blanks out literals PostgreSQL quotes back (`invalid input syntax for type uuid: "..."`). */
function redactLiterals(text: string): string {
  return text.replace(/'(?:[^']|'')*'/g, "'…'").replace(/: "(?:[^"\\]|\\.)*"/g, ': "…"');
}

function statementOf(message: string): string | undefined {
  const m = STATEMENT.exec(message);
  if (!m?.[1]) return undefined;
  const kind = m[1].toLowerCase().replace(/\s+/g, " ");
  return m[2] && !/^(?:\$|\d)/.test(m[2]) ? `${kind} ${m[2]}` : kind;
}

/**
 * The server's own words. MikroORM writes `<statement with values> - <message>` and then
 * `\n - detail: <detail>`; the detail is cut by its known text, then only what follows the last
 * ` - ` is kept. A message that does not start with a statement is the driver's own, first line.
 */
function primaryMessage(message: string, statement: string | undefined, detail: unknown): string {
  let text = message;
  if (statement !== undefined) {
    const suffix = typeof detail === "string" ? `\n - detail: ${detail}` : undefined;
    if (suffix !== undefined && text.endsWith(suffix)) text = text.slice(0, -suffix.length);
    const separator = text.lastIndexOf(" - ");
    text = separator >= 0 ? text.slice(separator + 3) : "";
  }
  const firstLine = text.split("\n")[0] ?? "";
  return redactLiterals(firstLine).slice(0, 200);
}

/** A description of a database error that holds no bound value; undefined for other errors. */
export function describeDbError(error: unknown): DbErrorDescription | undefined {
  if (!isErrorLike(error) || !isDbError(error)) return undefined;
  const message = typeof error.message === "string" ? error.message : "";
  const statement = statementOf(message);
  const code = codeOf(error);
  return {
    type: typeof error.name === "string" ? error.name : "Error",
    ...(code !== undefined ? { sqlState: code } : {}),
    ...(statement !== undefined ? { statement } : {}),
    ...(typeof error.table === "string" ? { table: error.table } : {}),
    ...(typeof error.constraint === "string" ? { constraint: error.constraint } : {}),
    message: primaryMessage(message, statement, (error as { detail?: unknown }).detail),
    unavailable: isUnavailable(error),
  };
}
