// Path template grammar and rule flattening, table-driven.
import test from "ava";
import { create } from "@bufbuild/protobuf";
import { HttpRuleSchema, CustomHttpPatternSchema } from "../../gen/google/api/http_pb.js";
import { bindingsOfRule, parsePathTemplate, TemplateSyntaxError } from "./http-rule.js";

const lit = (value: string) => ({ kind: "literal", value }) as const;
const star = { kind: "wildcard" } as const;
const deep = { kind: "deep-wildcard" } as const;
const v = (path: string, start: number, end: number, toEnd = false) => ({
  fieldPath: path.split("."),
  start,
  end,
  toEnd,
});

const valid = [
  { template: "/", segments: [], variables: [], verb: "" },
  { template: "/v1/things", segments: [lit("v1"), lit("things")], variables: [], verb: "" },
  { template: "/v1/things/{id}", segments: [lit("v1"), lit("things"), star], variables: [v("id", 2, 3)], verb: "" },
  {
    template: "/v1/{name=shelves/*/books/*}",
    segments: [lit("v1"), lit("shelves"), star, lit("books"), star],
    variables: [v("name", 1, 5)],
    verb: "",
  },
  {
    template: "/v1/{name=files/**}",
    segments: [lit("v1"), lit("files"), deep],
    variables: [v("name", 1, 3, true)],
    verb: "",
  },
  {
    template: "/v1/{book.name=shelves/*/books/*}",
    segments: [lit("v1"), lit("shelves"), star, lit("books"), star],
    variables: [v("book.name", 1, 5)],
    verb: "",
  },
  {
    template: "/v1/{name=shelves/*/books/*}:archive",
    segments: [lit("v1"), lit("shelves"), star, lit("books"), star],
    variables: [v("name", 1, 5)],
    verb: "archive",
  },
  { template: "/v1/books:search", segments: [lit("v1"), lit("books")], variables: [], verb: "search" },
  { template: "/v1/*/x/**", segments: [lit("v1"), star, lit("x"), deep], variables: [], verb: "" },
  {
    template: "/v1/{a}/{b.c=**}:do",
    segments: [lit("v1"), star, deep],
    variables: [v("a", 1, 2), v("b.c", 2, 3, true)],
    verb: "do",
  },
  { template: "/v1/a%20b", segments: [lit("v1"), lit("a b")], variables: [], verb: "" },
  {
    template: "/api/observations/latest-positions",
    segments: [lit("api"), lit("observations"), lit("latest-positions")],
    variables: [],
    verb: "",
  },
];

for (const c of valid) {
  test(`parses ${c.template}`, (t) => {
    const parsed = parsePathTemplate(c.template);
    t.deepEqual(
      { segments: parsed.segments, variables: parsed.variables, verb: parsed.verb },
      { segments: c.segments, variables: c.variables, verb: c.verb },
    );
  });
}

const invalid: [template: string, reason: RegExp][] = [
  ["", /must start with/],
  ["v1/things", /must start with/],
  ["/v1//things", /empty segment/],
  ["/v1/things/", /trailing/],
  ["/v1/{id", /unclosed/],
  ["/v1/{a={b}}", /nest/],
  ["/v1/**/x", /last segment/],
  ["/v1/{name=**}/x", /last segment/],
  ["/v1/{x.}", /invalid field path/],
  ["/v1/{1x}", /invalid field path/],
  ["/v1/{id}abc", /whole segments/],
  ["/v1/a{id}", /malformed segment/],
  ["/v1/{id}/{id}", /bound twice/],
  ["/v1/a:b/c", /':'/],
  ["/v1/x:", /invalid verb/],
  ["/v1/x:a:b", /more than one/],
  ["/v1/a b", /invalid literal/],
  ["/v1/{name=a//b}", /empty segment/],
];

for (const [template, reason] of invalid) {
  test(`rejects ${JSON.stringify(template)}`, (t) => {
    const err = t.throws(() => parsePathTemplate(template), { instanceOf: TemplateSyntaxError });
    t.regex(err.message, reason);
  });
}

test("flattens additional bindings, each with its own method, body and response body", (t) => {
  const rule = create(HttpRuleSchema, {
    pattern: { case: "patch", value: "/v1/{book.name=shelves/*/books/*}" },
    body: "book",
    additionalBindings: [
      { pattern: { case: "put", value: "/v1/{book.name=shelves/*/books/*}" }, body: "*" },
      {
        pattern: { case: "custom", value: create(CustomHttpPatternSchema, { kind: "search", path: "/v1/books" }) },
        responseBody: "books",
      },
    ],
  });
  const out = bindingsOfRule(rule).map((b) => [b.httpMethod, b.path.template, b.body, b.responseBody]);
  t.deepEqual(out, [
    ["PATCH", "/v1/{book.name=shelves/*/books/*}", "book", ""],
    ["PUT", "/v1/{book.name=shelves/*/books/*}", "*", ""],
    ["SEARCH", "/v1/books", "", "books"],
  ]);
});

test("rejects rules without a pattern, nested additional bindings and dotted body fields", (t) => {
  t.throws(() => bindingsOfRule(create(HttpRuleSchema, {})), { message: /no pattern/ });
  t.throws(
    () =>
      bindingsOfRule(
        create(HttpRuleSchema, {
          pattern: { case: "get", value: "/a" },
          additionalBindings: [{ pattern: { case: "get", value: "/b" }, additionalBindings: [{ pattern: { case: "get", value: "/c" } }] }],
        }),
      ),
    { message: /cannot nest/ },
  );
  t.throws(() => bindingsOfRule(create(HttpRuleSchema, { pattern: { case: "post", value: "/a" }, body: "a.b" })), {
    message: /top-level field/,
  });
});
