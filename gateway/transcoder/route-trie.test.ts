// Route matching (priority, verbs, 404 vs 405) and the start-up checks of the route table.
import test from "ava";
import { create } from "@bufbuild/protobuf";
import { HttpRuleSchema } from "../../gen/google/api/http_pb.js";
import { LibraryService } from "../../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { bindingsOfRule, parsePathTemplate } from "./http-rule.js";
import { compileRouteTable, routeSourcesOf, type RouteSource } from "./route-table.js";
import { RouteConflictError, RouteTrie } from "./route-trie.js";
import { serviceStyleOf } from "../style.js";

const routes: [method: string, template: string][] = [
  ["GET", "/v1/things"],
  ["POST", "/v1/things"],
  ["GET", "/v1/things/{id}"],
  ["DELETE", "/v1/things/{id}"],
  ["GET", "/v1/things/special"],
  ["POST", "/v1/things/{id}:publish"],
  ["GET", "/v1/{name=files/**}"],
  ["GET", "/v1/{name=files/**}:meta"],
  ["GET", "/"],
];
const trie = new RouteTrie<string>();
for (const [m, tpl] of routes) trie.insert(m, parsePathTemplate(tpl), `${m} ${tpl}`, tpl);

const cases: [method: string, path: string, expected: string][] = [
  ["GET", "/v1/things", "GET /v1/things"],
  ["POST", "/v1/things", "POST /v1/things"],
  ["GET", "/v1/things/42", "GET /v1/things/{id}"],
  ["GET", "/v1/things/special", "GET /v1/things/special"],
  ["GET", "/v1/things/%73pecial", "GET /v1/things/special"],
  ["DELETE", "/v1/things/special", "DELETE /v1/things/{id}"],
  ["POST", "/v1/things/42:publish", "POST /v1/things/{id}:publish"],
  ["GET", "/v1/things/a:b", "GET /v1/things/{id}"],
  ["GET", "/v1/files/a/b/c", "GET /v1/{name=files/**}"],
  ["GET", "/v1/files", "GET /v1/{name=files/**}"],
  ["GET", "/v1/files/a/b:meta", "GET /v1/{name=files/**}:meta"],
  ["GET", "/", "GET /"],
  ["GET", "/v1/nothing", "404"],
  ["GET", "/v1/things/", "404"],
  ["GET", "/v1/things/42/extra", "404"],
  ["GET", "/v1/files/a//b", "404"],
  ["GET", "/v1/things/42:unknown", "GET /v1/things/{id}"],
  ["PUT", "/v1/things", "405 GET, POST"],
  ["PATCH", "/v1/things/42", "405 DELETE, GET"],
  // The verb reading has no GET, but the whole segment is a fine {id}.
  ["GET", "/v1/things/42:publish", "GET /v1/things/{id}"],
  ["PUT", "/v1/things/42:publish", "405 DELETE, GET, POST"],
  ["POST", "/v1/files/x:meta", "405 GET"],
];

for (const [method, path, expected] of cases) {
  test(`${method} ${path} → ${expected}`, (t) => {
    const m = trie.match(method, path);
    const got = m.kind === "found" ? m.route : m.kind === "not-found" ? "404" : `405 ${m.allow.join(", ")}`;
    t.is(got, expected);
  });
}

test("a matched route hands back the raw segments without the verb", (t) => {
  const m = trie.match("POST", "/v1/things/a%2Fb:publish");
  t.is(m.kind, "found");
  if (m.kind === "found") t.deepEqual(m.segments, ["v1", "things", "a%2Fb"]);
});

test("templates of the same shape and method conflict, whatever their variable names", (t) => {
  const local = new RouteTrie<string>();
  local.insert("GET", parsePathTemplate("/v1/things/{id}"), "a", "A.Get");
  local.insert("DELETE", parsePathTemplate("/v1/things/{name}"), "b", "A.Delete");
  const err = t.throws(() => local.insert("GET", parsePathTemplate("/v1/things/*"), "c", "B.Get"), {
    instanceOf: RouteConflictError,
  });
  t.regex(err.message, /A\.Get/);
  t.regex(err.message, /B\.Get/);
});

const getBook = LibraryService.method.getBook;
const createBook = LibraryService.method.createBook;
const listBooks = LibraryService.method.listBooks;
const style = serviceStyleOf(LibraryService);
const source = (method: RouteSource["method"], init: Parameters<typeof create<typeof HttpRuleSchema>>[1]) =>
  bindingsOfRule(create(HttpRuleSchema, init)).map((binding) => ({ method, binding, style }));

test("the test contract compiles into one route per binding", (t) => {
  const table = compileRouteTable(routeSourcesOf([LibraryService]));
  t.is(table.routes.length, 16);
  t.true(table.routes.some((r) => r.httpMethod === "SEARCH" && r.template === "/v1/books"));
});

const badRules: [name: string, sources: () => RouteSource[], reason: RegExp][] = [
  [
    "two methods on one route",
    () => [
      ...source(getBook, { pattern: { case: "get", value: "/x/{name}" } }),
      ...source(listBooks, { pattern: { case: "get", value: "/x/{shelf_id}" } }),
    ],
    /conflicting HTTP rules.*GetBook/,
  ],
  ["a path variable naming no field", () => source(getBook, { pattern: { case: "get", value: "/x/{nope}" } }), /unknown field/],
  [
    "a path variable on a message field",
    () => source(createBook, { pattern: { case: "post", value: "/x/{book}" }, body: "*" }),
    /singular scalar/,
  ],
  ["a path variable on a repeated field", () => source(listBooks, { pattern: { case: "get", value: "/x/{tags}" } }), /singular scalar/],
  ["a path variable through a scalar", () => source(listBooks, { pattern: { case: "get", value: "/x/{page_size.x}" } }), /not a message/],
  ["a body field that does not exist", () => source(createBook, { pattern: { case: "post", value: "/x" }, body: "nope" }), /body field/],
  ["a GET with a body", () => source(createBook, { pattern: { case: "get", value: "/x" }, body: "*" }), /GET rule cannot take a body/],
  [
    "a response_body that does not exist",
    () => source(listBooks, { pattern: { case: "get", value: "/x" }, responseBody: "nope" }),
    /response_body/,
  ],
];

for (const [name, sources, reason] of badRules) {
  test(`start-up rejects ${name}`, (t) => {
    t.throws(() => compileRouteTable(sources()), { message: reason });
  });
}
