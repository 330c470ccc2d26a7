// A mesh with the agent gateway pointed at a loopback OpenAI-compatible fake (provider `fake`,
// models gpt-4o-mini and gpt-4o), its data directory of its own and the rate limit off (tests
// poll the front; the request window is agents-front's subject), plus a JSON caller for the front.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecutionContext } from "ava";
import { type FakeOpenAi, startFakeOpenAi } from "./fake-openai.js";
import { startTestMesh, type TestMesh } from "./start-mesh.js";

export interface AgentsMesh {
  mesh: TestMesh;
  fake: FakeOpenAi;
  /** The agent front's base URL. */
  base: string;
}

export function providerFlags(fake: FakeOpenAi, dataDir: string): string[] {
  return [
    `--AgentGateway:DataDir=${dataDir}`,
    "--AgentGateway:ProviderRetryBaseMs=1",
    `--Providers:fake:BaseUrl=${fake.url}`,
    `--Providers:fake:ApiKey=${fake.apiKey}`,
    "--Providers:fake:Models:0=gpt-4o-mini",
    "--Providers:fake:Models:1=gpt-4o",
    "--Gateway:RateLimit:Enabled=false",
  ];
}

export async function startAgentsMesh(t: ExecutionContext, flags: string[] = []): Promise<AgentsMesh> {
  const fake = await startFakeOpenAi();
  const dataDir = mkdtempSync(join(tmpdir(), "agents-mesh-"));
  const mesh = await startTestMesh({ flags: [...providerFlags(fake, dataDir), ...flags] });
  t.teardown(async () => {
    await mesh.close();
    await fake.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { mesh, fake, base: mesh.frontUrl("agents") };
}

export interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies of many shapes
  body: any;
}

/** A JSON request to the front; a string body is sent as it is. */
export async function call(base: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}
