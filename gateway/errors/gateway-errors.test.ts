// Refusals the gateway makes on its own, before any service is called: each answers in the
// front's style, names the culprit, and never reaches the service.
import test from "ava";
import { Agent, request as httpRequest } from "node:http";
import { startHarness, type Harness, type SendOptions } from "../../test/support/gateway-harness.js";

let h: Harness;
test.before(async () => {
  h = await startHarness({ bodyLimitBytes: 1024 });
});
test.after.always(() => h?.close());

interface Row {
  readonly name: string;
  readonly front?: "library" | "inventory";
  readonly request: SendOptions;
  readonly status: number;
  /** Expected `errors` map (library) — exact. */
  readonly errors?: Record<string, string[]>;
  /** Substring of the detail / message. */
  readonly detail?: RegExp;
  /** Expected `error` name (inventory). */
  readonly error?: string;
  readonly headers?: Record<string, string>;
}

const listBooks = (query: string): SendOptions => ({ method: "GET", path: `/v1/shelves/1/books?${query}` });
const createBook = (body: unknown): SendOptions => ({ method: "POST", path: "/v1/shelves/1/books", body });

const rows: Row[] = [
  { name: "unknown path", request: { method: "GET", path: "/v2/nothing" }, status: 404, detail: /No operation/ },
  { name: "empty trailing segment", request: { method: "GET", path: "/v1/books/" }, status: 404 },
  {
    name: "unknown path, error-message style",
    front: "inventory",
    request: { method: "GET", path: "/v1/shelves/1/books/2" },
    status: 404,
    error: "NOT_FOUND",
  },
  {
    name: "wrong method lists the allowed ones",
    request: { method: "POST", path: "/v1/shelves/1/books/2" },
    status: 405,
    headers: { allow: "DELETE, GET, PATCH, PUT" },
    detail: /POST/,
  },
  {
    name: "wrong method on a custom-method path",
    request: { method: "GET", path: "/v1/books" },
    status: 405,
    headers: { allow: "SEARCH" },
  },
  {
    name: "wrong method, error-message style",
    front: "inventory",
    request: { method: "PUT", path: "/inventory/items" },
    status: 405,
    error: "METHOD_NOT_ALLOWED",
    headers: { allow: "GET, POST" },
  },
  {
    name: "malformed JSON",
    request: { ...createBook(undefined), rawBody: '{"title": ', headers: { "content-type": "application/json" } },
    status: 400,
    detail: /not valid JSON/,
  },
  {
    name: "malformed JSON, error-message style",
    front: "inventory",
    request: { method: "POST", path: "/inventory/items", rawBody: "{", headers: { "content-type": "application/json" } },
    status: 400,
    error: "VALIDATION_ERROR",
  },
  {
    name: "unknown property",
    request: createBook({ title: "t", bogus: 1 }),
    status: 400,
    errors: { bogus: ["unknown property"] },
    detail: /"bogus"/,
  },
  {
    name: "unknown nested property",
    request: createBook({ author: { displayName: "a", nickname: "b" } }),
    status: 400,
    errors: { "author.nickname": ["unknown property"] },
  },
  {
    name: "unknown property in a repeated element",
    request: createBook({ contributors: [{ displayName: "a" }, { nick: "b" }] }),
    status: 400,
    errors: { "contributors[1].nick": ["unknown property"] },
  },
  {
    name: "a property of the wrong type",
    request: createBook({ title: 5 }),
    status: 400,
    errors: { title: ["expected a string"] },
  },
  {
    name: "a bad timestamp in the body",
    request: createBook({ publishedAt: "yesterday" }),
    status: 400,
    errors: { publishedAt: ["expected an RFC 3339 timestamp"] },
  },
  {
    name: "a body that is not an object",
    request: createBook([1, 2]),
    status: 400,
    detail: /expected a JSON object/,
  },
  {
    name: "unknown property, error-message style",
    front: "inventory",
    request: { method: "POST", path: "/inventory/items", body: { id: "x", colour: "red" } },
    status: 400,
    error: "VALIDATION_ERROR",
    detail: /"colour"/,
  },
  {
    name: "text/plain body",
    request: { ...createBook(undefined), rawBody: "{}", headers: { "content-type": "text/plain" } },
    status: 415,
  },
  {
    name: "a body without a content type",
    request: { ...createBook(undefined), rawBody: "{}" },
    status: 415,
  },
  {
    name: "JSON in another charset",
    request: { ...createBook(undefined), rawBody: "{}", headers: { "content-type": "application/json; charset=latin1" } },
    status: 415,
  },
  {
    name: "415, error-message style",
    front: "inventory",
    request: {
      method: "POST",
      path: "/inventory/items",
      rawBody: "id=1",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    },
    status: 415,
    error: "UNSUPPORTED_MEDIA_TYPE",
  },
  {
    name: "declared body over the limit",
    request: createBook({ title: "x".repeat(2000) }),
    status: 413,
  },
  {
    name: "413, error-message style",
    front: "inventory",
    request: { method: "POST", path: "/inventory/items", body: { id: "x".repeat(2000) } },
    status: 413,
    error: "PAYLOAD_TOO_LARGE",
  },
  {
    name: "missing body",
    request: { method: "POST", path: "/v1/shelves/1/books" },
    status: 400,
    detail: /body is required/,
  },
  {
    name: "empty body",
    request: { ...createBook(undefined), rawBody: "", headers: { "content-type": "application/json" } },
    status: 400,
    detail: /body is required/,
  },
  {
    name: "missing body, error-message style",
    front: "inventory",
    request: { method: "POST", path: "/inventory/items" },
    status: 400,
    error: "VALIDATION_ERROR",
    detail: /body is required/,
  },
  { name: "bad int", request: listBooks("pageSize=abc"), status: 400, errors: { pageSize: ["expected an integer"] }, detail: /"pageSize"/ },
  { name: "int out of range", request: listBooks("page_size=99999999999"), status: 400, errors: { page_size: ["expected an integer"] } },
  { name: "bad bool", request: listBooks("includeDrafts=yes"), status: 400, errors: { includeDrafts: ["expected true or false"] } },
  { name: "bad wrapped bool", request: listBooks("inPrint=1"), status: 400, errors: { inPrint: ["expected true or false"] } },
  {
    name: "bad enum",
    request: listBooks("genre=GENRE_POETRY"),
    status: 400,
    errors: { genre: ["expected one of GENRE_UNSPECIFIED, GENRE_FICTION, GENRE_HISTORY"] },
  },
  {
    name: "bad timestamp",
    request: listBooks("publishedAfter=yesterday"),
    status: 400,
    errors: { publishedAfter: ["expected an RFC 3339 timestamp"] },
  },
  {
    name: "bad duration",
    request: listBooks("maxAge=1h"),
    status: 400,
    errors: { maxAge: ['expected a duration in seconds such as "1.5s"'] },
  },
  { name: "bad float", request: listBooks("minRating=high"), status: 400, errors: { minRating: ["expected a number"] } },
  { name: "bad bytes", request: listBooks("cursor=%%%"), status: 400, errors: { cursor: ["invalid percent-encoding"] } },
  { name: "bad repeated item", request: listBooks("years=1999&years=x"), status: 400, errors: { years: ["expected an integer"] } },
  {
    name: "bad nested value",
    request: listBooks("filter.author.displayName=a&filter.titlePrefix=b&pageSize=z"),
    status: 400,
    errors: { pageSize: ["expected an integer"] },
  },
  {
    name: "unknown query parameter",
    request: listBooks("colour=red"),
    status: 400,
    errors: { colour: ["unknown query parameter: unknown field"] },
  },
  {
    name: "unknown nested query parameter",
    request: listBooks("filter.colour=red"),
    status: 400,
    errors: { "filter.colour": ["unknown query parameter: unknown field"] },
  },
  {
    name: "a query parameter naming a message",
    request: listBooks("filter=x"),
    status: 400,
    errors: { filter: ["unknown query parameter: the field cannot be set from a query string"] },
  },
  {
    name: "a query parameter for a path-bound field",
    request: listBooks("shelfId=9"),
    status: 400,
    errors: { shelfId: ["unknown query parameter: the field is set by the path"] },
  },
  {
    name: "a query parameter for the body field",
    request: { method: "POST", path: "/v1/shelves/1/books?book.title=x", body: {} },
    status: 400,
    errors: { "book.title": ["unknown query parameter: the field is set by the request body"] },
  },
  {
    name: "any query parameter with body '*'",
    request: { method: "POST", path: "/v1/shelves/1/books/2:archive?reason=x", body: {} },
    status: 400,
    errors: { reason: ["unknown query parameter: this operation takes every field from the body"] },
  },
  {
    name: "a singular query parameter given twice",
    request: listBooks("pageSize=1&page_size=2"),
    status: 400,
    errors: { page_size: ["given more than once"] },
  },
  {
    name: "malformed percent-encoding in the query",
    request: listBooks("pageToken=%E0%A4%A"),
    status: 400,
    errors: { pageToken: ["invalid percent-encoding"] },
  },
  {
    name: "a path variable that does not parse",
    request: { method: "GET", path: "/v1/shelves/abc/books" },
    status: 400,
    errors: { shelf_id: ["expected an integer"] },
    detail: /path parameter "shelf_id"/,
  },
  {
    name: "malformed percent-encoding in the path",
    request: { method: "GET", path: "/v1/books/%E0%A4%A" },
    status: 400,
    errors: { name: ["invalid percent-encoding"] },
  },
  {
    name: "bad query value, error-message style",
    front: "inventory",
    request: { method: "GET", path: "/inventory/items?page_size=ten" },
    status: 400,
    error: "VALIDATION_ERROR",
    detail: /"page_size"/,
  },
];

for (const r of rows) {
  test(r.name, async (t) => {
    const res = await h.send(r.front ?? "library", r.request);
    t.is(res.status, r.status, res.text);
    t.is(res.call, undefined, "the service must not be called");
    for (const [name, value] of Object.entries(r.headers ?? {})) t.is(res.headers[name], value);
    if ((r.front ?? "library") === "library") {
      t.is(res.headers["content-type"], "application/problem+json");
      const doc = res.json as { type: string; status: number; title: string; detail: string; errors?: unknown };
      t.is(doc.status, r.status);
      t.is(doc.type, "about:blank");
      t.truthy(doc.title);
      if (r.errors) t.deepEqual(doc.errors, r.errors);
      if (r.detail) t.regex(doc.detail, r.detail);
    } else {
      t.is(res.headers["content-type"], "application/json");
      const doc = res.json as { error: string; message: string };
      t.deepEqual(Object.keys(doc).sort(), ["error", "message"]);
      if (r.error) t.is(doc.error, r.error);
      if (r.detail) t.regex(doc.message, r.detail);
    }
    t.truthy(res.headers["x-request-id"]);
  });
}

const agentOf = (req: ReturnType<typeof httpRequest>) => (req as unknown as { agent: Agent }).agent;

test("a chunked body is cut off at the limit without being read to the end", async (t) => {
  const port = h.port("library");
  const result = await new Promise<{ status: number; body: string; sent: number }>((resolve, reject) => {
    let sent = 0;
    const req = httpRequest({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: "/v1/shelves/1/books",
      headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
      // A keep-alive client, as most are; one that sends Connection: close gets its socket closed
      // by node:http right after the answer, which can race the answer itself.
      agent: new Agent({ keepAlive: true }),
    });
    let status = 0;
    req.on("response", (res) => {
      status = res.statusCode ?? 0;
      let body = "";
      res.on("data", (c: Buffer) => (body += c.toString()));
      res.on("end", () => {
        req.destroy();
        agentOf(req).destroy();
        resolve({ status, body, sent });
      });
    });
    // Once the answer is in, the gateway may cut the connection under our writes.
    req.on("error", (e) => (status === 0 ? reject(e) : undefined));
    // Keep sending until the gateway answers; it must not wait for the end of the body.
    const chunk = Buffer.from(`"${"x".repeat(510)}",`);
    req.write('{"title": [');
    const pump = () => {
      if (req.destroyed || sent > 64 * 1024 * 1024) return;
      sent += chunk.length;
      if (req.write(chunk)) setImmediate(pump);
      else req.once("drain", pump);
    };
    pump();
  });
  t.is(result.status, 413);
  t.regex(result.body, /1024 bytes/);
  t.true(result.sent < 64 * 1024 * 1024, "the gateway answered before the body ended");
});
