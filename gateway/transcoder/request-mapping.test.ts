// HTTP request → protobuf request message, for every binding shape of the test contract.
// Each row goes through a real front and an in-process service that captures what it got.
import test from "ava";
import { create, equals, type DescMessage, type Message, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ArchiveBookRequestSchema,
  CreateBookRequestSchema,
  CreateItemRequestSchema,
  DeleteBookRequestSchema,
  GetBookAuthorRequestSchema,
  GetBookRequestSchema,
  GetFileRequestSchema,
  Genre,
  ListBooksRequestSchema,
  ListItemsRequestSchema,
  SearchBooksRequestSchema,
  UpdateBookRequestSchema,
  GetItemRequestSchema,
} from "../../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { startHarness, type Harness, type SendOptions } from "../../test/support/gateway-harness.js";

let h: Harness;
test.before(async () => {
  h = await startHarness();
});
test.after.always(() => h?.close());

interface Row<D extends DescMessage = DescMessage> {
  readonly name: string;
  readonly front?: "library" | "inventory";
  readonly request: SendOptions;
  readonly rpc: string;
  readonly schema: D;
  readonly expect: MessageInitShape<D>;
}

const row = <D extends DescMessage>(r: Row<D>): Row => r as unknown as Row;

const rows: Row[] = [
  row({
    name: "multi-segment variable keeps its literals",
    request: { method: "GET", path: "/v1/shelves/1/books/2" },
    rpc: "GetBook",
    schema: GetBookRequestSchema,
    expect: { name: "shelves/1/books/2" },
  }),
  row({
    name: "additional binding with a single-segment variable, percent-decoded",
    request: { method: "GET", path: "/v1/books/b%20one%2Ftwo" },
    rpc: "GetBook",
    schema: GetBookRequestSchema,
    expect: { name: "b one/two" },
  }),
  row({
    name: "multi-segment variable decodes each segment but keeps %2F",
    request: { method: "GET", path: "/v1/shelves/a%2Fb/books/%C3%A9t%C3%A9" },
    rpc: "GetBook",
    schema: GetBookRequestSchema,
    expect: { name: "shelves/a%2Fb/books/été" },
  }),
  row({
    name: "** captures every remaining segment",
    request: { method: "GET", path: "/v1/files/a/b/c.txt" },
    rpc: "GetFile",
    schema: GetFileRequestSchema,
    expect: { name: "files/a/b/c.txt" },
  }),
  row({
    name: "** with one segment",
    request: { method: "GET", path: "/v1/files/x" },
    rpc: "GetFile",
    schema: GetFileRequestSchema,
    expect: { name: "files/x" },
  }),
  row({
    name: "a literal suffix after a variable",
    request: { method: "GET", path: "/v1/shelves/1/books/2/author" },
    rpc: "GetBookAuthor",
    schema: GetBookAuthorRequestSchema,
    expect: { name: "shelves/1/books/2" },
  }),
  row({
    name: "query parameters of every kind, in both spellings",
    request: {
      method: "GET",
      path:
        "/v1/shelves/42/books?pageSize=10&page_token=abc&includeDrafts=true&minRating=4.5&genre=GENRE_FICTION" +
        "&tags=a&tags=b&years=1999&years=2001&filter.titlePrefix=Dune&filter.author.display_name=Frank" +
        "&publishedAfter=2024-01-02T03:04:05Z&maxAge=3600s&minPages=100&inPrint=false&cursor=AQID" +
        "&genres=GENRE_HISTORY&genres=1&maxIsbn=18446744073709551615&minScore=0.5&language=en&publisher=Ace" +
        "&readMask=title,pageCount",
    },
    rpc: "ListBooks",
    schema: ListBooksRequestSchema,
    expect: {
      shelfId: 42n,
      pageSize: 10,
      pageToken: "abc",
      includeDrafts: true,
      minRating: 4.5,
      genre: Genre.FICTION,
      tags: ["a", "b"],
      years: [1999, 2001],
      filter: { titlePrefix: "Dune", author: { displayName: "Frank" } },
      publishedAfter: timestampFromDate(new Date("2024-01-02T03:04:05Z")),
      maxAge: { seconds: 3600n },
      minPages: 100,
      inPrint: false,
      cursor: new Uint8Array([1, 2, 3]),
      genres: [Genre.HISTORY, Genre.FICTION],
      maxIsbn: 18446744073709551615n,
      minScore: 0.5,
      language: "en",
      publisher: "Ace",
      readMask: { paths: ["title", "page_count"] },
    },
  }),
  row({
    name: "query values are form-decoded (+ is a space)",
    request: { method: "GET", path: "/v1/shelves/1/books?pageToken=a%2Bb+c&genre=2&language=" },
    rpc: "ListBooks",
    schema: ListBooksRequestSchema,
    expect: { shelfId: 1n, pageToken: "a+b c", genre: Genre.HISTORY, language: "" },
  }),
  row({
    name: "no query at all leaves every field unset",
    request: { method: "GET", path: "/v1/shelves/-3/books" },
    rpc: "ListBooks",
    schema: ListBooksRequestSchema,
    expect: { shelfId: -3n },
  }),
  row({
    name: "body is one field; path and query fill the others",
    request: {
      method: "POST",
      path: "/v1/shelves/7/books?requestId=r1",
      body: {
        title: "T",
        tags: ["x"],
        author: { displayName: "A" },
        published_at: "2020-05-06T07:08:09.5Z",
        labels: { k: "v" },
        edition: 2,
        isbn: "9780441013593",
      },
    },
    rpc: "CreateBook",
    schema: CreateBookRequestSchema,
    expect: {
      shelfId: 7n,
      requestId: "r1",
      book: {
        title: "T",
        tags: ["x"],
        author: { displayName: "A" },
        publishedAt: timestampFromDate(new Date("2020-05-06T07:08:09.500Z")),
        labels: { k: "v" },
        edition: 2,
        isbn: 9780441013593n,
      },
    },
  }),
  row({
    name: "a nested path variable lands inside the body field",
    request: {
      method: "PATCH",
      path: "/v1/shelves/1/books/2?updateMask=title,subtitle",
      body: { title: "New", subtitle: null },
    },
    rpc: "UpdateBook",
    schema: UpdateBookRequestSchema,
    expect: { book: { name: "shelves/1/books/2", title: "New" }, updateMask: { paths: ["title", "subtitle"] } },
  }),
  row({
    name: "body '*' takes the whole message; the path wins over the body",
    request: {
      method: "PUT",
      path: "/v1/shelves/1/books/2",
      body: { book: { name: "shelves/9/books/9", title: "X" }, updateMask: "title" },
    },
    rpc: "UpdateBook",
    schema: UpdateBookRequestSchema,
    expect: { book: { name: "shelves/1/books/2", title: "X" }, updateMask: { paths: ["title"] } },
  }),
  row({
    name: "custom verb with body '*'",
    request: { method: "POST", path: "/v1/shelves/1/books/2:archive", body: { reason: "old" } },
    rpc: "ArchiveBook",
    schema: ArchiveBookRequestSchema,
    expect: { name: "shelves/1/books/2", reason: "old" },
  }),
  row({
    name: "custom HTTP method",
    request: { method: "SEARCH", path: "/v1/books", body: { query: "dune", genres: ["GENRE_FICTION", 2] } },
    rpc: "SearchBooks",
    schema: SearchBooksRequestSchema,
    expect: { query: "dune", genres: [Genre.FICTION, Genre.HISTORY] },
  }),
  row({
    name: "DELETE without a body",
    request: { method: "DELETE", path: "/v1/shelves/1/books/2" },
    rpc: "DeleteBook",
    schema: DeleteBookRequestSchema,
    expect: { name: "shelves/1/books/2" },
  }),
  row({
    name: "a body sent to a rule without one is ignored",
    request: { method: "DELETE", path: "/v1/shelves/1/books/3", body: { name: "other" } },
    rpc: "DeleteBook",
    schema: DeleteBookRequestSchema,
    expect: { name: "shelves/1/books/3" },
  }),
  row({
    name: "application/*+json with a charset is JSON",
    request: {
      method: "POST",
      path: "/v1/shelves/1/books/2:archive",
      rawBody: '{"reason":"r"}',
      headers: { "content-type": "application/vnd.meshwork+json; charset=UTF-8" },
    },
    rpc: "ArchiveBook",
    schema: ArchiveBookRequestSchema,
    expect: { name: "shelves/1/books/2", reason: "r" },
  }),
  row({
    name: "proto-name service: body '*' in either spelling",
    front: "inventory",
    request: {
      method: "POST",
      path: "/inventory/items",
      body: { id: "i1", quantity: 3, tags: [], dimensions: { width_cm: 1.5, heightCm: 2 }, note: "n" },
    },
    rpc: "CreateItem",
    schema: CreateItemRequestSchema,
    expect: { id: "i1", quantity: 3, dimensions: { widthCm: 1.5, heightCm: 2 }, note: "n" },
  }),
  row({
    name: "proto-name service: query in either spelling",
    front: "inventory",
    request: { method: "GET", path: "/inventory/items?page_size=5&nameFilter=x" },
    rpc: "ListItems",
    schema: ListItemsRequestSchema,
    expect: { pageSize: 5, nameFilter: "x" },
  }),
  row({
    name: "an id with a colon is not mistaken for a verb",
    front: "inventory",
    request: { method: "GET", path: "/inventory/items/urn:x:1" },
    rpc: "GetItem",
    schema: GetItemRequestSchema,
    expect: { id: "urn:x:1" },
  }),
];

for (const r of rows) {
  test(r.name, async (t) => {
    const res = await h.send(r.front ?? "library", r.request);
    t.true(res.status < 300, `status ${res.status}: ${res.text}`);
    t.is(res.call?.rpc, r.rpc);
    const expected = create(r.schema, r.expect);
    const got = res.call!.input as Message;
    t.true(equals(r.schema, got as never, expected as never), `got ${JSON.stringify(got, replacer)}`);
  });
}

function replacer(_key: string, value: unknown) {
  return typeof value === "bigint" ? `${value}n` : value;
}
