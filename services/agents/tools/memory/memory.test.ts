// Memory tools on the mesh database (PGlite here, real PostgreSQL when DATABASE_URL is set): store,
// full-text search ranked, forget, and the errors.
import test from "ava";
import { type ToolDatabase, openToolDatabase } from "../testing-database.js";
import { toolNamed } from "../testing.js";
import { ToolError } from "../tool.js";
import { memoryTools } from "./index.js";

let database: ToolDatabase;
test.before(async () => {
  database = await openToolDatabase("memory");
});
test.after.always(() => database?.close());

const store = toolNamed(memoryTools, "memory_store");
const search = toolNamed(memoryTools, "memory_search");
const forget = toolNamed(memoryTools, "memory_forget");

interface Hit {
  id: string;
  text: string;
  category: string | null;
  score: number;
}

test.serial("memory_store answers { id }; memory_search finds by stemmed words, best first, with category and score", async (t) => {
  const ctx = await database.context();
  const a = (await store.run({ text: "The staging cluster runs PostgreSQL 16 behind pgbouncer", category: "infra" }, ctx)) as {
    id: string;
  };
  const b = (await store.run({ text: "Deploys to staging happen every Tuesday; staging deploys need a ticket" }, ctx)) as { id: string };
  await store.run({ text: "Alice prefers tea over coffee", category: "people" }, ctx);
  t.regex(a.id, /^[0-9a-f-]{36}$/);
  t.notDeepEqual(a, b);

  const hits = (await search.run({ query: "staging deploy", maxResults: 5 }, ctx)) as Hit[];
  t.deepEqual(
    hits.map((h) => h.id),
    [b.id],
  );
  t.is(hits[0]!.category, null);
  t.true(hits[0]!.score > 0);

  const ranked = (await search.run({ query: "staging", maxResults: 5 }, ctx)) as Hit[];
  t.deepEqual(
    ranked.map((h) => h.id),
    [b.id, a.id],
    "the text that says staging three times ranks first",
  );
  t.true(ranked[0]!.score >= ranked[1]!.score);
  t.deepEqual(ranked[1], {
    id: a.id,
    text: "The staging cluster runs PostgreSQL 16 behind pgbouncer",
    category: "infra",
    score: ranked[1]!.score,
  });

  t.deepEqual(
    ((await search.run({ query: "staging -tuesday", maxResults: 5 }, ctx)) as Hit[]).map((h) => h.id),
    [a.id],
    "web-search syntax: -word excludes",
  );
  t.is(((await search.run({ query: "staging", maxResults: 1 }, ctx)) as Hit[]).length, 1);
  t.deepEqual(await search.run({ query: "kubernetes", maxResults: 5 }, ctx), []);
  t.deepEqual(
    ((await search.run({ query: "people", maxResults: 5 }, ctx)) as Hit[]).map((h) => h.text),
    ["Alice prefers tea over coffee"],
  );
});

test.serial("memory is shared: what one agent stores another finds; memory_forget removes it", async (t) => {
  const writer = await database.context({ agentId: "agent-writer" });
  const reader = await database.context({ agentId: "agent-reader" });
  const { id } = (await store.run({ text: "The quarterly report is due on the fifth" }, writer)) as { id: string };
  t.deepEqual(
    ((await search.run({ query: "quarterly report", maxResults: 5 }, reader)) as Hit[]).map((h) => h.id),
    [id],
  );
  t.is(await forget.run({ id }, reader), `Forgot memory ${id}.`);
  t.deepEqual(await search.run({ query: "quarterly report", maxResults: 5 }, reader), []);
  await t.throwsAsync(forget.run({ id }, reader), { instanceOf: ToolError, message: `no memory with id '${id}'` });
});

test("the errors: unknown or malformed id, empty text or query, maxResults below 1", async (t) => {
  const ctx = await database.context();
  await t.throwsAsync(forget.run({ id: "00000000-0000-4000-8000-000000000000" }, ctx), {
    instanceOf: ToolError,
    message: /no memory with id/,
  });
  await t.throwsAsync(forget.run({ id: "not-an-id" }, ctx), { instanceOf: ToolError, message: "no memory with id 'not-an-id'" });
  await t.throwsAsync(store.run({ text: "   " }, ctx), { instanceOf: ToolError, message: /text must not be empty/ });
  await t.throwsAsync(search.run({ query: "", maxResults: 5 }, ctx), { instanceOf: ToolError, message: /query must not be empty/ });
  await t.throwsAsync(search.run({ query: "x", maxResults: 0 }, ctx), { instanceOf: ToolError, message: /maxResults/ });
  t.deepEqual(await search.run({ query: "the and of", maxResults: 5 }, ctx), [], "stop words only: no match, no failure");
});

test("without the mesh database the tools answer an Error", async (t) => {
  const ctx = await database.context();
  delete ctx.services.em;
  await t.throwsAsync(store.run({ text: "x" }, ctx), { instanceOf: ToolError, message: /mesh database is not available/ });
});
