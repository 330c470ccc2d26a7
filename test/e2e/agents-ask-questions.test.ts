// ask_questions through a whole mesh against the loopback OpenAI fake: on a /hubs/agent turn
// (@microsoft/signalr over WebSockets) the server invokes the client method AskQuestions and the
// client's result becomes the tool result sent back to the provider (answered, cancelled, null,
// answers that do not fit, no answer within Tools:Approval:TimeoutSeconds; a request the tool refuses
// never reaches the client); off the hub (a REST turn) the questions still wait as a pending
// `questions` item, whose answers are checked the same way.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HttpTransportType, type HubConnection, HubConnectionBuilder, LogLevel } from "@microsoft/signalr";
import test, { type ExecutionContext } from "ava";
import { call, providerFlags, startAgentsMesh } from "../support/agents-mesh.js";
import { type FakeOpenAi, startFakeOpenAi } from "../support/fake-openai.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

let mesh: TestMesh;
let fake: FakeOpenAi;
let base: string;
let dataDir: string;

test.before(async () => {
  fake = await startFakeOpenAi();
  dataDir = mkdtempSync(join(tmpdir(), "agents-ask-"));
  mesh = await startTestMesh({ flags: providerFlags(fake, dataDir) });
  base = mesh.frontUrl("agents");
});

test.after.always(async () => {
  await mesh?.close();
  await fake?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const request = {
  title: "Deploy",
  context: "Release 1.2",
  questions: [
    { key: "env", prompt: "Where?", type: "singleSelect", options: ["staging", "prod"], required: true },
    { key: "replicas", prompt: "How many?", type: "number", validation: { min: 1, max: 5 } },
    { key: "notify", prompt: "Tell the team?", type: "confirm" },
  ],
  submitLabel: "Deploy now",
};

const askCall = (id: string, questions: unknown = request) => ({
  kind: "reply" as const,
  toolCalls: [{ id, name: "ask_questions", arguments: JSON.stringify({ questionsJson: JSON.stringify(questions) }) }],
  usage: { prompt_tokens: 10, completion_tokens: 3 },
});
const reply = (text: string) => ({ kind: "reply" as const, content: [text], usage: { prompt_tokens: 20, completion_tokens: 2 } });

/** The tool result the provider got back: the `tool` message of the last request, parsed. */
function toolResult(on: FakeOpenAi): unknown {
  const last = on.chatRequests().at(-1)!.body as { messages: { role: string; content: string }[] };
  const results = last.messages.filter((m) => m.role === "tool");
  return JSON.parse(results.at(-1)!.content);
}

async function spawnAgent(at: string): Promise<string> {
  const spawned = await call(at, "POST", "/api/agents", {});
  if (spawned.status !== 201) throw new Error(`spawn answered ${spawned.status}`);
  return spawned.body.id;
}

/** A /hubs/agent connection whose AskQuestions handler is `answer`; the requests it got are kept. */
async function hubClient(t: ExecutionContext, at: string, answer: (request: Record<string, unknown>) => unknown) {
  const connection: HubConnection = new HubConnectionBuilder()
    .withUrl(`${at}/hubs/agent`, { transport: HttpTransportType.WebSockets })
    .configureLogging(LogLevel.None)
    .build();
  const asked: Record<string, unknown>[] = [];
  connection.on("AskQuestions", (question: Record<string, unknown>) => {
    asked.push(question);
    return answer(question);
  });
  await connection.start();
  t.teardown(() => connection.stop());
  const chat = (agentId: string, message: string) =>
    new Promise<{ type: string; content: string }[]>((resolve, reject) => {
      const items: { type: string; content: string }[] = [];
      connection
        .stream("StreamChat", agentId, message)
        .subscribe({ next: (i) => items.push(i as never), complete: () => resolve(items), error: reject });
    });
  return { asked, chat };
}

test.serial("on /hubs/agent, AskQuestions' { answers } is the tool result; nothing waits as a pending item", async (t) => {
  const agent = await spawnAgent(base);
  const client = await hubClient(t, base, () => ({ answers: { env: "staging", replicas: 3, notify: true } }));
  fake.script.push(askCall("q1"), reply("deploying"));
  const items = await client.chat(agent, "deploy");
  t.deepEqual(
    items.map((i) => i.type),
    ["start", "content", "end"],
  );
  t.is(items.at(-1)!.content, "deploying");
  t.deepEqual(toolResult(fake), { status: "answered", answers: { env: "staging", replicas: 3, notify: true } });

  t.is(client.asked.length, 1);
  const asked = client.asked[0]!;
  t.is(asked.agentId, agent);
  t.regex(String(asked.approvalId), /^[0-9a-f-]{36}$/);
  t.like(asked, { title: "Deploy", context: "Release 1.2", allowCancel: true, submitLabel: "Deploy now" });
  t.deepEqual(
    (asked.questions as { key: string; type: string }[]).map((q) => [q.key, q.type]),
    [
      ["env", "singleSelect"],
      ["replicas", "number"],
      ["notify", "confirm"],
    ],
  );
  t.deepEqual((await call(base, "GET", `/api/agents/${agent}/approvals`)).body, []);
});

test.serial("on /hubs/agent, { cancelled: true } is cancelled, or unanswered when allowCancel is false", async (t) => {
  const agent = await spawnAgent(base);
  const client = await hubClient(t, base, () => ({ cancelled: true }));
  fake.script.push(askCall("q2"), reply("cancelled then"));
  t.is((await client.chat(agent, "deploy")).at(-1)!.content, "cancelled then");
  t.deepEqual(toolResult(fake), { status: "cancelled", answers: {} });

  fake.script.push(askCall("q3", { ...request, allowCancel: false }), reply("must answer"));
  t.is((await client.chat(agent, "deploy")).at(-1)!.content, "must answer");
  t.deepEqual(toolResult(fake), { status: "unanswered", answers: {} });
  t.is(client.asked[1]!.allowCancel, false);
});

test.serial("on /hubs/agent, a null result, a failing handler and answers that do not fit are unanswered", async (t) => {
  const agent = await spawnAgent(base);
  const results: (() => unknown)[] = [
    () => null,
    () => {
      throw new Error("the form broke");
    },
    () => ({ answers: { env: "moon", replicas: 3 } }),
    () => ({ answers: { replicas: 9, env: "prod" } }),
    () => ({ answers: { replicas: 2 } }),
  ];
  const client = await hubClient(t, base, () => results.shift()!());
  const unanswered = async (id: string) => {
    fake.script.push(askCall(id), reply(`after ${id}`));
    t.is((await client.chat(agent, id)).at(-1)!.content, `after ${id}`);
    return toolResult(fake);
  };
  t.deepEqual(await unanswered("n1"), { status: "unanswered", answers: {} });
  t.deepEqual(await unanswered("n2"), { status: "unanswered", answers: {} });
  t.deepEqual(await unanswered("n3"), {
    status: "unanswered",
    answers: {},
    reason: "the client's answers do not fit the questions: answers.env must be one of staging, prod",
  });
  const reason = async (id: string) => {
    const result = (await unanswered(id)) as { status: string; reason?: string };
    t.is(result.status, "unanswered");
    return String(result.reason);
  };
  t.regex(await reason("n4"), /answers\.replicas must be at most 5$/);
  t.regex(await reason("n5"), /answers\.env is required$/);
  t.is(client.asked.length, 5);
  t.deepEqual((await call(base, "GET", `/api/agents/${agent}/approvals`)).body, []);
});

test.serial("a request the tool refuses never reaches the client; a text answer must match its pattern", async (t) => {
  const agent = await spawnAgent(base);
  const client = await hubClient(t, base, () => ({ answers: { tag: "v1.x" } }));
  const tagged = { questions: [{ key: "tag", prompt: "Which tag?", validation: { pattern: "^v\\d+\\.\\d+$" } }] };
  fake.script.push(askCall("r1", { questions: [{ key: "tag", prompt: "Which tag?", validation: { pattern: "(" } }] }), reply("bad"));
  t.is((await client.chat(agent, "r1")).at(-1)!.content, "bad");
  const last = fake.chatRequests().at(-1)!.body as { messages: { role: string; content: string }[] };
  t.is(last.messages.at(-1)!.content, "Error: questions[0].validation.pattern is not a valid regular expression");
  t.is(client.asked.length, 0);

  fake.script.push(askCall("r2", tagged), reply("after r2"));
  await client.chat(agent, "r2");
  t.deepEqual(toolResult(fake), {
    status: "unanswered",
    answers: {},
    reason: "the client's answers do not fit the questions: answers.tag does not match the pattern ^v\\d+\\.\\d+$",
  });
  t.is(client.asked.length, 1);
});

test.serial("on /hubs/agent, no result within Tools:Approval:TimeoutSeconds is unanswered", async (t) => {
  const own = await startAgentsMesh(t, ["--Tools:Approval:TimeoutSeconds=1"]);
  const agent = await spawnAgent(own.base);
  let asked!: () => void;
  const wasAsked = new Promise<void>((resolve) => {
    asked = resolve;
  });
  // The handler never settles: only the server's timeout ends the wait.
  const client = await hubClient(t, own.base, () => {
    asked();
    return new Promise(() => {});
  });
  own.fake.script.push(askCall("t1"), reply("timed out"));
  const items = client.chat(agent, "deploy");
  await wasAsked;
  t.is((await items).at(-1)!.content, "timed out");
  t.deepEqual(toolResult(own.fake), { status: "unanswered", answers: {} });
});

test.serial("off the hub, the questions wait as a pending item whose answers are checked like a hub client's", async (t) => {
  const agent = await spawnAgent(base);
  const pendingItem = () =>
    until(async () => {
      const listed = await call(base, "GET", `/api/agents/${agent}/approvals`);
      return listed.body?.length === 1 && listed.body[0];
    }, "a pending questions item");

  fake.script.push(askCall("p1", { ...request, allowCancel: false }), reply("thanks"));
  const turn = call(base, "POST", `/api/agents/${agent}/message`, { message: "deploy" });
  const item = await pendingItem();
  t.like(item, { kind: "questions", tool: "ask_questions", arguments: { title: "Deploy", allowCancel: false } });
  const path = `/api/agents/${agent}/approvals/${item.id}`;
  const misfit = await call(base, "POST", path, { answers: { env: "moon" } });
  t.is(misfit.status, 400);
  t.is(misfit.body.message, "answers.env must be one of staging, prod");
  t.is((await call(base, "POST", path, { answers: { env: "prod", extra: 1 } })).status, 400);
  const cancel = await call(base, "POST", path, { decision: "cancel" });
  t.is(cancel.status, 400);
  t.regex(cancel.body.message, /does not allow cancel/);
  const answered = await call(base, "POST", path, { answers: { env: "prod", replicas: 1 } });
  t.is(answered.status, 200, JSON.stringify(answered.body));
  t.is((await turn).body.response, "thanks");
  t.deepEqual(toolResult(fake), { status: "answered", answers: { env: "prod", replicas: 1 } });
});
