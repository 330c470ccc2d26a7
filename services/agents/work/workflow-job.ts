// `meshwork job --agent <name> --workflow <file>`: a batch run of one workflow, `{ name, steps: [{
// prompt, expect? }] }` (JSON), in one session of the agent AgentGateway:Agents:<name> (Provider,
// Model, SystemPrompt). Each step is a turn of that agent; a step passes when the turn answered and
// its response matches `expect` (a regular expression, when given). The report `{ workflow, agent,
// steps: [{ prompt, response, passed }], passed }` is the job's answer; the exit code is 0 when
// every step passed, else 1. An unknown agent name or a bad workflow file is a ConfigError (exit 2).
import { readFileSync } from "node:fs";
import { Code, ConnectError } from "@connectrpc/connect";
import { ConfigError } from "../../runtime/config/index.js";
import type { LoggerLike } from "../../runtime/logging/index.js";
import type { Agents } from "../agents/agents.js";
import { runTurn, type TurnSettings } from "../agents/turns.js";
import type { NamedAgentSettings } from "../settings.js";

export interface WorkflowStep {
  prompt: string;
  expect?: RegExp;
}

export interface Workflow {
  name: string;
  steps: WorkflowStep[];
}

export interface WorkflowReport {
  workflow: string;
  agent: string;
  steps: { prompt: string; response: string; passed: boolean }[];
  passed: boolean;
}

/** Reads and checks a workflow file; a ConfigError naming the file and what is wrong otherwise. */
export function readWorkflow(path: string): Workflow {
  const bad = (why: string): never => {
    throw new ConfigError(`Bad workflow file ${path}: ${why}.`);
  };
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    return bad(`cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return bad("not JSON");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return bad('expected an object { "name", "steps" }');
  const { name, steps } = parsed as { name?: unknown; steps?: unknown };
  if (typeof name !== "string" || name.trim() === "") bad('"name" must be a non-empty string');
  if (!Array.isArray(steps) || steps.length === 0) bad('"steps" must be a non-empty list');
  return {
    name: name as string,
    steps: (steps as unknown[]).map((step, i) => {
      if (step === null || typeof step !== "object" || Array.isArray(step)) bad(`steps[${i}] must be an object { "prompt", "expect"? }`);
      const { prompt, expect } = step as { prompt?: unknown; expect?: unknown };
      if (typeof prompt !== "string" || prompt.trim() === "") bad(`steps[${i}].prompt must be a non-empty string`);
      if (expect === undefined || expect === null) return { prompt: prompt as string };
      if (typeof expect !== "string") return bad(`steps[${i}].expect must be a string (a regular expression)`);
      try {
        return { prompt: prompt as string, expect: new RegExp(expect) };
      } catch {
        return bad(`steps[${i}].expect is not a valid regular expression`);
      }
    }),
  };
}

/** The agent's settings by name; a ConfigError naming the configured ones otherwise. */
export function namedAgent(agents: Readonly<Record<string, NamedAgentSettings>>, name: string): NamedAgentSettings {
  const found = Object.entries(agents).find(([key]) => key.toLowerCase() === name.toLowerCase());
  if (found) return found[1];
  const known = Object.keys(agents);
  throw new ConfigError(
    `Unknown agent '${name}': no AgentGateway:Agents:${name}:* settings (${known.length ? `configured: ${known.join(", ")}` : "none is configured"}).`,
  );
}

/** Runs every step in one session of a new agent, stopped at the end; answers the report. */
export async function runWorkflow(deps: {
  agents: Agents;
  turnSettings: TurnSettings;
  logger: Pick<LoggerLike, "warn">;
  agentName: string;
  agent: NamedAgentSettings;
  workflow: Workflow;
}): Promise<WorkflowReport> {
  const { agents, agentName, workflow } = deps;
  let agentId: string;
  try {
    agentId = (await agents.spawn({ provider: deps.agent.provider, model: deps.agent.model, systemPrompt: deps.agent.systemPrompt })).id;
  } catch (err) {
    // A provider or model the agent names that no provider offers is the agent's setting at fault.
    if (err instanceof ConnectError && err.code === Code.InvalidArgument)
      throw new ConfigError(`Invalid setting AgentGateway:Agents:${agentName}: ${err.rawMessage}.`);
    throw err;
  }
  const steps: WorkflowReport["steps"] = [];
  try {
    for (const [index, step] of workflow.steps.entries()) {
      let response = "";
      let answered = false;
      try {
        response = (await runTurn(agents.deps, deps.turnSettings, agentId, step.prompt)).response;
        answered = true;
      } catch (err) {
        deps.logger.warn(
          { step: index, error: err instanceof ConnectError ? err.rawMessage : err instanceof Error ? err.message : String(err) },
          "workflow step got no answer",
        );
      }
      const passed = answered && response !== "" && (step.expect === undefined || step.expect.test(response));
      steps.push({ prompt: step.prompt, response, passed });
    }
  } finally {
    await agents.stop(agentId, "requested").catch(() => undefined);
  }
  return { workflow: workflow.name, agent: agentName, steps, passed: steps.every((s) => s.passed) };
}
