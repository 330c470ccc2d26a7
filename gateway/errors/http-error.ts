// The one error shape the gateway renders: both its own refusals (404, 405, 413, ...) and
// service failures end up here before a style writes them.

/** Property or parameter name → messages, as the client named it. */
export type FieldErrors = Record<string, string[]>;

export class HttpError extends Error {
  override name = "HttpError";
  constructor(
    readonly status: number,
    /** snake_case error name: a Connect code name (`not_found`) or an HTTP one (`method_not_allowed`). */
    readonly errorName: string,
    /** Safe to show to clients. */
    readonly detail: string,
    readonly fieldErrors?: FieldErrors,
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(detail);
  }
}

export function badRequest(detail: string, field?: string, reason?: string): HttpError {
  return new HttpError(400, "invalid_argument", detail, field === undefined ? undefined : { [field]: [reason ?? detail] });
}
