// How the e2e suites call a REST front with plain fetch: JSON in; status, headers, raw text and
// the parsed JSON body out, so every suite reads answers (and problem+json errors) the same way.

export interface RestAnswer<B = unknown> {
  res: Response;
  status: number;
  headers: Headers;
  contentType: string | null;
  /** The content type, "" when there is none. */
  type: string;
  text: string;
  /** The body parsed when the answer is JSON (problem+json included); undefined otherwise. */
  body: B;
}

/** One request; a body is sent as JSON with its content type. Answers whatever the status. */
export async function sendJson<B = unknown>(
  url: string,
  method: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<RestAnswer<B>> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const contentType = res.headers.get("content-type");
  const json = text !== "" && /json/.test(contentType ?? "");
  return {
    res,
    status: res.status,
    headers: res.headers,
    contentType,
    type: contentType ?? "",
    text,
    body: (json ? JSON.parse(text) : undefined) as B,
  };
}
