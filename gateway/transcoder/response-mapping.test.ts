// Service result or failure → HTTP status, headers and body, in both REST styles.
import test from "ava";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { getOption } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { LibraryService } from "../../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { serviceStyleOf } from "../style.js";
import { bindingsOfRule } from "./http-rule.js";
import { compileResponsePlan } from "./response-mapping.js";
import { startHarness, type Harness, type Responder, type SendOptions } from "../../test/support/gateway-harness.js";
import { codeName, httpStatusOf } from "./status-codes.js";
import { errorCodeOf } from "../errors/to-error-message.js";

let h: Harness;
test.before(async () => {
  h = await startHarness();
});
test.after.always(() => h?.close());

/** Every property of a Book in the library style when nothing is set. */
const emptyBook = {
  name: "",
  title: "",
  subtitle: null,
  genre: "GENRE_UNSPECIFIED",
  tags: [],
  publishedAt: null,
  author: null,
  contributors: [],
  pageCount: null,
  isbn: "0",
  labels: {},
  edition: null,
};

const fail =
  (code: Code, message: string, violations?: [field: string, description: string][]): Responder =>
  () => {
    const details = violations
      ? [{ desc: BadRequestSchema, value: { fieldViolations: violations.map(([field, description]) => ({ field, description })) } }]
      : [];
    throw new ConnectError(message, code, undefined, details);
  };

interface Row {
  readonly name: string;
  readonly front?: "library" | "inventory";
  readonly request: SendOptions;
  readonly status: number;
  readonly contentType?: string | undefined;
  readonly body?: unknown;
  /** A string the body must not contain. */
  readonly hidden?: string;
  /** The raw body, for answers that are not JSON. */
  readonly text?: string;
  /** Response headers that must have these values; undefined means absent. */
  readonly headers?: Readonly<Record<string, string | undefined>>;
}

const utf8 = (text: string) => new TextEncoder().encode(text);
const csvFile = { contentType: "text/csv; charset=utf-8", data: utf8('a,b\r\n1,"x,y"\r\n') };
const exportShelf = (respond: Responder, query = ""): SendOptions => ({
  method: "GET",
  path: `/v1/shelves/7:export${query}`,
  respond,
});
/** A responder that sets response headers before answering. */
const withHeaders =
  (headers: Record<string, string>, answer: Responder): Responder =>
  (input, ctx) => {
    for (const [k, v] of Object.entries(headers)) ctx.responseHeader.set(k, v);
    return answer(input, ctx);
  };

const getBook = (respond: Responder): SendOptions => ({ method: "GET", path: "/v1/shelves/1/books/2", respond });
const getItem = (respond: Responder): SendOptions => ({ method: "GET", path: "/inventory/items/i1", respond });

const rows: Row[] = [
  {
    name: "library: unset optional and message fields are null, implicit ones present",
    request: getBook(() => ({ name: "shelves/1/books/2", title: "Dune" })),
    status: 200,
    contentType: "application/json",
    body: { ...emptyBook, name: "shelves/1/books/2", title: "Dune" },
  },
  {
    name: "library: nulls inside nested messages and repeated elements; set values kept",
    request: getBook(() => ({
      title: "Dune",
      subtitle: "",
      pageCount: 0,
      genre: 1,
      author: { displayName: "Frank" },
      contributors: [{ displayName: "A", email: "a@x" }, { displayName: "B" }],
      publishedAt: timestampFromDate(new Date("2024-01-02T03:04:05Z")),
      edition: 3,
    })),
    status: 200,
    body: {
      ...emptyBook,
      title: "Dune",
      subtitle: "",
      genre: "GENRE_FICTION",
      author: { displayName: "Frank", email: null },
      contributors: [
        { displayName: "A", email: "a@x" },
        { displayName: "B", email: null },
      ],
      publishedAt: "2024-01-02T03:04:05Z",
      pageCount: 0,
      edition: 3,
    },
  },
  {
    name: "library: response_body answers the bare array",
    request: {
      method: "GET",
      path: "/v1/shelves/1/books",
      respond: () => ({ books: [{ title: "a" }, { title: "b", subtitle: "s" }], nextPageToken: "t" }),
    },
    status: 200,
    body: [
      { ...emptyBook, title: "a" },
      { ...emptyBook, title: "b", subtitle: "s" },
    ],
  },
  {
    name: "library: response_body of an empty list is []",
    request: { method: "GET", path: "/v1/shelves/1/books" },
    status: 200,
    body: [],
  },
  {
    name: "library: response_body of a message field",
    request: { method: "GET", path: "/v1/shelves/1/books/2/author", respond: () => ({ author: { displayName: "F" } }) },
    status: 200,
    body: { displayName: "F", email: null },
  },
  {
    name: "library: response_body of an unset message field is null",
    request: { method: "GET", path: "/v1/shelves/1/books/2/author" },
    status: 200,
    body: null,
  },
  {
    name: "library: success_status 201",
    request: { method: "POST", path: "/v1/shelves/1/books", body: { title: "t" }, respond: () => ({ title: "t" }) },
    status: 201,
    body: { ...emptyBook, title: "t" },
  },
  {
    name: "library: success_status 204 writes no body",
    request: { method: "DELETE", path: "/v1/shelves/1/books/2" },
    status: 204,
    contentType: undefined,
    body: undefined,
  },
  {
    name: "inventory: proto names, unset optional fields omitted",
    front: "inventory",
    request: getItem(() => ({ id: "i1", dimensions: { widthCm: 2 } })),
    status: 200,
    contentType: "application/json",
    body: { id: "i1", quantity: 0, tags: [], dimensions: { width_cm: 2, height_cm: 0 } },
  },
  {
    name: "inventory: 201",
    front: "inventory",
    request: { method: "POST", path: "/inventory/items", body: { id: "x" }, respond: () => ({ id: "x", note: "n" }) },
    status: 201,
    body: { id: "x", note: "n", quantity: 0, tags: [] },
  },
  {
    name: "inventory: 204",
    front: "inventory",
    request: { method: "DELETE", path: "/inventory/items/x" },
    status: 204,
    body: undefined,
  },
  {
    name: "library: NotFound is a problem document",
    request: getBook(fail(Code.NotFound, "book shelves/1/books/2 not found")),
    status: 404,
    contentType: "application/problem+json",
    body: { type: "about:blank", title: "Not Found", status: 404, detail: "book shelves/1/books/2 not found" },
  },
  {
    name: "library: BadRequest violations become the errors map, in client names relative to the body",
    request: {
      method: "POST",
      path: "/v1/shelves/1/books",
      body: { title: "" },
      respond: fail(Code.InvalidArgument, "invalid book", [
        ["book.title", "must not be empty"],
        ["book.title", "must be short"],
        ["request_id", "must be a uuid"],
        ["book.author.display_name", "required"],
        ["book.contributors[1].email", "bad email"],
        ["somewhere.else", "kept as sent"],
      ]),
    },
    status: 400,
    contentType: "application/problem+json",
    body: {
      type: "about:blank",
      title: "Bad Request",
      status: 400,
      detail: "invalid book",
      errors: {
        title: ["must not be empty", "must be short"],
        requestId: ["must be a uuid"],
        "author.displayName": ["required"],
        "contributors[1].email": ["bad email"],
        "somewhere.else": ["kept as sent"],
      },
    },
  },
  {
    name: "library: FailedPrecondition is 422 by the service's option",
    request: getBook(fail(Code.FailedPrecondition, "book is archived")),
    status: 422,
    body: { type: "about:blank", title: "Unprocessable Entity", status: 422, detail: "book is archived" },
  },
  {
    name: "library: Internal hides the service's message",
    request: getBook(fail(Code.Internal, "pg: connection to 10.0.0.7 refused")),
    status: 500,
    body: { type: "about:blank", title: "Internal Server Error", status: 500, detail: "The service failed to handle the request." },
    hidden: "10.0.0.7",
  },
  {
    name: "library: a bare Error thrown by a handler is a generic 500",
    request: getBook(() => {
      throw new Error("secret stack detail");
    }),
    status: 500,
    hidden: "secret",
  },
  {
    name: "library: Unavailable hides the service's message",
    request: getBook(fail(Code.Unavailable, "upstream 10.1.1.1 down")),
    status: 503,
    hidden: "10.1.1.1",
  },
  {
    name: "inventory: NotFound as { error, message }",
    front: "inventory",
    request: getItem(fail(Code.NotFound, "item i1 not found")),
    status: 404,
    contentType: "application/json",
    body: { error: "NOT_FOUND", message: "item i1 not found" },
  },
  {
    name: "inventory: FailedPrecondition defaults to 400",
    front: "inventory",
    request: getItem(fail(Code.FailedPrecondition, "locked")),
    status: 400,
    body: { error: "VALIDATION_ERROR", message: "locked" },
  },
  {
    name: "inventory: BadRequest details do not change the error-message shape",
    front: "inventory",
    request: getItem(fail(Code.InvalidArgument, "bad id", [["id", "must be a uuid"]])),
    status: 400,
    body: { error: "VALIDATION_ERROR", message: "bad id" },
  },
  {
    name: "inventory: Internal hides the service's message",
    front: "inventory",
    request: getItem(fail(Code.Internal, "SELECT * FROM secret_table")),
    status: 500,
    body: { error: "INTERNAL_ERROR", message: "The service failed to handle the request." },
    hidden: "secret_table",
  },
  {
    name: "inventory: PermissionDenied",
    front: "inventory",
    request: getItem(fail(Code.PermissionDenied, "role viewer cannot read")),
    status: 403,
    body: { error: "FORBIDDEN", message: "role viewer cannot read" },
  },
  {
    name: "library: a set HttpBody field is the answer, raw, with its content type and the service's headers",
    request: exportShelf(
      withHeaders({ "content-disposition": 'attachment; filename="shelf-7.csv"' }, () => ({
        books: [{ title: "ignored" }],
        count: 1,
        file: csvFile,
      })),
      "?format=csv",
    ),
    status: 200,
    contentType: "text/csv; charset=utf-8",
    text: 'a,b\r\n1,"x,y"\r\n',
    headers: {
      "content-disposition": 'attachment; filename="shelf-7.csv"',
      "content-length": String(utf8('a,b\r\n1,"x,y"\r\n').byteLength),
    },
  },
  {
    name: "library: an unset HttpBody field is left out of the JSON, not even null",
    request: exportShelf(() => ({ books: [{ title: "a" }], count: 1 })),
    status: 200,
    contentType: "application/json",
    body: { books: [{ ...emptyBook, title: "a" }], count: 1, note: null },
  },
  {
    name: "library: an HttpBody field with no content type is application/octet-stream",
    request: exportShelf(() => ({ file: { data: utf8("raw bytes") } })),
    status: 200,
    contentType: "application/octet-stream",
    text: "raw bytes",
  },
  {
    name: "library: a set but empty HttpBody field is an empty raw answer",
    request: exportShelf(() => ({ count: 3, file: { contentType: "text/plain" } })),
    status: 200,
    contentType: "text/plain",
    text: "",
    headers: { "content-length": "0" },
  },
  {
    name: "library: a response that is google.api.HttpBody is answered raw",
    request: {
      method: "GET",
      path: "/v1/downloads/report",
      respond: () => ({ contentType: "application/gpx+xml", data: utf8("<gpx/>") }),
    },
    status: 200,
    contentType: "application/gpx+xml",
    text: "<gpx/>",
  },
  {
    name: "library: an empty google.api.HttpBody response is an empty octet stream",
    request: { method: "GET", path: "/v1/downloads/nothing" },
    status: 200,
    contentType: "application/octet-stream",
    text: "",
  },
  {
    name: "inventory: a raw answer keeps the method's success status",
    front: "inventory",
    request: {
      method: "POST",
      path: "/inventory/exports",
      body: { as_file: true },
      respond: withHeaders({ location: "/inventory/exports/1" }, () => ({
        itemCount: 2,
        exportFile: { contentType: "application/geo+json", data: utf8('{"type":"FeatureCollection","features":[]}') },
      })),
    },
    status: 201,
    contentType: "application/geo+json",
    body: { type: "FeatureCollection", features: [] },
    headers: { location: "/inventory/exports/1" },
  },
  {
    name: "inventory: proto names, an unset HttpBody field absent",
    front: "inventory",
    request: { method: "POST", path: "/inventory/exports", body: {}, respond: () => ({ itemCount: 2 }) },
    status: 201,
    contentType: "application/json",
    body: { item_count: 2 },
  },
  {
    name: "library: the service's x- and caching headers reach the client on a JSON answer",
    request: exportShelf(
      withHeaders({ "x-export-truncated": "true", "x-export-total-count": "12", "cache-control": "no-store", "retry-after": "5" }, () => ({
        count: 1,
      })),
    ),
    status: 200,
    contentType: "application/json",
    headers: {
      "x-export-truncated": "true",
      "x-export-total-count": "12",
      "cache-control": "no-store",
      "retry-after": "5",
    },
  },
  {
    name: "library: protocol and framing headers from the service never reach the client",
    request: exportShelf(
      withHeaders(
        {
          "grpc-foo": "1",
          "connect-foo": "1",
          "content-language": "de",
          te: "trailers",
          "x-request-id": "spoofed",
          "x-grpc-web": "1",
          "set-cookie": "a=b",
        },
        () => ({ count: 1 }),
      ),
    ),
    status: 200,
    contentType: "application/json",
    headers: {
      "grpc-foo": undefined,
      "connect-foo": undefined,
      "content-language": undefined,
      te: undefined,
      "x-grpc-web": undefined,
      "set-cookie": undefined,
    },
  },
  {
    name: "library: a 204 carries the service's headers",
    request: {
      method: "DELETE",
      path: "/v1/shelves/1/books/2",
      respond: withHeaders({ "x-deleted-count": "1" }, () => ({})),
    },
    status: 204,
    body: undefined,
    headers: { "x-deleted-count": "1" },
  },
  {
    name: "library: a failure carries the service's Retry-After",
    request: exportShelf(
      withHeaders({ "retry-after": "30", "grpc-foo": "1" }, () => {
        throw new ConnectError("slow down", Code.ResourceExhausted);
      }),
    ),
    status: 429,
    contentType: "application/problem+json",
    headers: { "retry-after": "30", "grpc-foo": undefined },
  },
  {
    name: "library: error metadata set on the ConnectError itself is forwarded too",
    request: getBook(() => {
      throw new ConnectError("busy", Code.Unavailable, { "retry-after": "7", "x-shard": "b" });
    }),
    status: 503,
    headers: { "retry-after": "7", "x-shard": "b" },
  },
];

for (const r of rows) {
  test(r.name, async (t) => {
    const res = await h.send(r.front ?? "library", r.request);
    t.is(res.status, r.status, res.text);
    if ("contentType" in r) t.is(res.headers["content-type"], r.contentType);
    if ("body" in r) t.deepEqual(res.json, r.body);
    if (r.hidden) t.false(res.text.includes(r.hidden));
    if (r.text !== undefined) t.is(res.text, r.text);
    for (const [name, value] of Object.entries(r.headers ?? {})) t.is(res.headers[name], value, name);
    t.truthy(res.headers["x-request-id"]);
    t.not(res.headers["x-request-id"], "spoofed");
  });
}

const table: [Code, number, string][] = [
  [Code.InvalidArgument, 400, "invalid_argument"],
  [Code.Unauthenticated, 401, "unauthenticated"],
  [Code.PermissionDenied, 403, "permission_denied"],
  [Code.NotFound, 404, "not_found"],
  [Code.AlreadyExists, 409, "already_exists"],
  [Code.Aborted, 409, "aborted"],
  [Code.FailedPrecondition, 400, "failed_precondition"],
  [Code.OutOfRange, 400, "out_of_range"],
  [Code.ResourceExhausted, 429, "resource_exhausted"],
  [Code.Canceled, 499, "canceled"],
  [Code.Unimplemented, 501, "unimplemented"],
  [Code.Unavailable, 503, "unavailable"],
  [Code.DeadlineExceeded, 504, "deadline_exceeded"],
  [Code.Internal, 500, "internal"],
  [Code.Unknown, 500, "unknown"],
  [Code.DataLoss, 500, "data_loss"],
];

test("a stream passes the service's forwardable headers on, never its protocol ones", async (t) => {
  const res = await h.send("library", {
    method: "GET",
    path: "/v1/shelves/3:watch",
    respond: withHeaders({ "x-stream-shard": "3", "grpc-foo": "1" }, () =>
      (async function* () {
        yield { shelfId: 3n, sequence: 1 };
      })(),
    ),
  });
  t.is(res.status, 200);
  t.is(res.headers["x-stream-shard"], "3");
  t.is(res.headers["grpc-foo"], undefined);
  t.is(res.headers["cache-control"], "no-store");
});

test("start-up rejects an HttpBody answer with success_status 204", (t) => {
  const method = LibraryService.method.downloadFile;
  const binding = bindingsOfRule(getOption(method, http))[0]!;
  t.throws(() => compileResponsePlan(method, binding, serviceStyleOf(LibraryService), 204, undefined), {
    message: /HttpBody.*204/,
  });
  const withField = LibraryService.method.exportShelf;
  const fieldBinding = bindingsOfRule(getOption(withField, http))[0]!;
  t.throws(() => compileResponsePlan(withField, fieldBinding, serviceStyleOf(LibraryService), 204, undefined));
  t.notThrows(() => compileResponsePlan(withField, fieldBinding, serviceStyleOf(LibraryService), 200, undefined));
});

test("Connect code → HTTP status table and snake_case names", (t) => {
  for (const [code, status, name] of table) {
    t.is(httpStatusOf(code), status, Code[code]);
    t.is(codeName(code), name);
  }
  t.is(httpStatusOf(Code.FailedPrecondition, 422), 422);
});

for (const [code, status, name] of table.filter(([c]) => c !== Code.Canceled)) {
  test(`over HTTP: ${Code[code]} → ${status}`, async (t) => {
    const res = await h.send("inventory", getItem(fail(code, "msg")));
    t.is(res.status, status);
    t.is((res.json as { error: string }).error, errorCodeOf(name));
  });
}

test("an ErrorInfo reason is the error-message style's code; a malformed one is ignored", async (t) => {
  const withReason = (reason: string) =>
    getItem(() => {
      throw new ConnectError("no such item", Code.NotFound, undefined, [{ desc: ErrorInfoSchema, value: { reason, domain: "test" } }]);
    });
  const named = await h.send("inventory", withReason("ITEM_NOT_FOUND"));
  t.is(named.status, 404);
  t.deepEqual(named.json, { error: "ITEM_NOT_FOUND", message: "no such item" });
  const malformed = await h.send("inventory", withReason("not a <code>"));
  t.deepEqual(malformed.json, { error: "NOT_FOUND", message: "no such item" });
  t.deepEqual(
    ["invalid_argument", "unauthenticated", "permission_denied", "resource_exhausted", "internal", "not_found", "method_not_allowed"].map(
      errorCodeOf,
    ),
    ["VALIDATION_ERROR", "UNAUTHORIZED", "FORBIDDEN", "RATE_LIMIT_EXCEEDED", "INTERNAL_ERROR", "NOT_FOUND", "METHOD_NOT_ALLOWED"],
  );
});

test("a detail that cannot be decoded leaves the status and message intact", async (t) => {
  const res = await h.send(
    "library",
    getBook(() => {
      const err = new ConnectError("bad", Code.InvalidArgument);
      err.details.push({ type: "google.rpc.BadRequest", value: new Uint8Array([0xff, 0xff]) });
      throw err;
    }),
  );
  t.is(res.status, 400);
  t.is((res.json as { detail: string }).detail, "bad");
});
