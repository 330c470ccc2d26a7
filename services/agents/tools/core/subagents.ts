// Subagents (C, and query_team_context A): spawn_agent runs a child conversation on the agent's
// provider and model (ToolServices.chat) and answers the child's final text; explore, plan and
// review children get only A tools, task and general children every tool the agent may use.
// spawn_team runs `agents: [{ name, type, prompt }]` toward a goal with a strategy and answers
// `{ strategy, results: { <name>: answer } }`; its results and events stay as the agent's team
// context (this instance's memory), which query_team_context reads (`results`, `events`, a name).
import type { FamilyDeps } from "../catalogue.js";
import { ToolError, type ToolContext, type ToolSpec } from "../tool.js";

export const agentTypes = ["explore", "task", "plan", "review", "general"] as const;
export const strategies = ["sequential", "fan-out", "supervisor", "debate"] as const;
type AgentType = (typeof agentTypes)[number];

const roles: Record<AgentType, string> = {
  explore: "You are an exploration subagent: investigate and report findings. Do not change anything.",
  task: "You are a task subagent: carry out the task and report what you did.",
  plan: "You are a planning subagent: produce a concrete step-by-step plan. Do not change anything.",
  review: "You are a review subagent: review critically and list problems and suggestions. Do not change anything.",
  general: "You are a general-purpose subagent: answer the request.",
};

interface TeamContext {
  results: Record<string, string>;
  events: { at: string; agent: string; event: string }[];
}

export function subagentTools(deps: FamilyDeps): ToolSpec[] {
  const teams = new Map<string, TeamContext>();
  const teamOf = (ctx: ToolContext) => {
    const key = ctx.agentId ?? ctx.sessionId ?? "";
    let team = teams.get(key);
    if (!team) {
      team = { results: {}, events: [] };
      teams.set(key, team);
    }
    return team;
  };
  const toolsFor = (type: AgentType) =>
    deps
      .dispatcher()
      .tools()
      .filter((t) => (type === "explore" || type === "plan" || type === "review" ? t.tier === "A" : true))
      .filter((t) => !["spawn_agent", "spawn_team", "ask_questions"].includes(t.name))
      .map((t) => t.name);
  const child = async (ctx: ToolContext, type: AgentType, prompt: string, followUps: string[] = []) => {
    const chat = ctx.services.chat;
    if (!chat) throw new ToolError("subagents need the agent's provider, which this context does not have");
    const messages: unknown[] = [
      { role: "system", content: roles[type] },
      { role: "user", content: prompt },
    ];
    let answer = await chat(ctx.agentId, { messages, tools: toolsFor(type), signal: ctx.signal });
    for (const next of followUps) {
      messages.push({ role: "assistant", content: answer }, { role: "user", content: next });
      answer = await chat(ctx.agentId, { messages, tools: toolsFor(type), signal: ctx.signal });
    }
    return answer;
  };

  return [
    {
      name: "spawn_agent",
      description: "Runs a subagent on this agent's provider and model and answers its final text.",
      tier: "C",
      parameters: {
        type: "object",
        properties: {
          type: {
            type: "string",
            enum: [...agentTypes],
            description: "explore, plan and review get only tools that need no confirmation.",
          },
          prompt: { type: "string", description: "The subagent's task." },
          mode: {
            type: "string",
            enum: ["single", "multi"],
            default: "single",
            description: "multi: the subagent gets a second turn to check and improve its answer.",
          },
        },
        required: ["type", "prompt"],
      },
      async run(args, ctx) {
        const followUps = args.mode === "multi" ? ["Check your answer against the task and give your final, improved answer."] : [];
        return child(ctx, args.type as AgentType, String(args.prompt), followUps);
      },
    },
    {
      name: "spawn_team",
      description:
        "Runs a team of subagents toward a goal: sequential (each sees the previous answers), fan-out (in parallel), supervisor (the first agent combines the others' answers) or debate (each answers, then answers the others). Answers { strategy, results }.",
      tier: "C",
      parameters: {
        type: "object",
        properties: {
          strategy: { type: "string", enum: [...strategies] },
          agents: {
            type: "array",
            description: "The team: [{ name, type, prompt }].",
            items: {
              type: "object",
              properties: { name: { type: "string" }, type: { type: "string", enum: [...agentTypes] }, prompt: { type: "string" } },
              required: ["name", "type", "prompt"],
            },
          },
          goal: { type: "string" },
          multiTurn: { type: "boolean", default: false, description: "Each member gets a second turn to improve its answer." },
        },
        required: ["strategy", "agents", "goal"],
      },
      async run(args, ctx) {
        const members = args.agents as { name: string; type: AgentType; prompt: string }[];
        if (members.length === 0) throw new ToolError("spawn_team needs at least one agent");
        const names = new Set(members.map((m) => m.name));
        if (names.size !== members.length) throw new ToolError("spawn_team's agents need distinct names");
        const strategy = String(args.strategy);
        if (strategy === "supervisor" && members.length < 2)
          throw new ToolError("the supervisor strategy needs a supervisor and at least one worker");
        if (strategy === "debate" && members.length < 2) throw new ToolError("the debate strategy needs at least two agents");
        const goal = String(args.goal);
        const followUps = args.multiTurn ? ["Check your answer against the goal and give your final, improved answer."] : [];
        const team = teamOf(ctx);
        team.results = {};
        const note = (agent: string, event: string) => team.events.push({ at: new Date().toISOString(), agent, event });
        const run = async (m: { name: string; type: AgentType; prompt: string }, extra = "") => {
          note(m.name, "started");
          const answer = await child(ctx, m.type, `Team goal: ${goal}\n\nYour part: ${m.prompt}${extra}`, followUps);
          note(m.name, "finished");
          return answer;
        };
        const results: Record<string, string> = {};
        const others = (except: string) =>
          Object.entries(results)
            .filter(([name]) => name !== except)
            .map(([name, answer]) => `\n\n${name} answered:\n${answer}`)
            .join("");
        if (strategy === "sequential") {
          for (const m of members) results[m.name] = await run(m, others(m.name));
        } else if (strategy === "fan-out") {
          const answers = await Promise.all(members.map((m) => run(m)));
          members.forEach((m, i) => {
            results[m.name] = answers[i]!;
          });
        } else if (strategy === "supervisor") {
          const [supervisor, ...workers] = members;
          const answers = await Promise.all(workers.map((m) => run(m)));
          workers.forEach((m, i) => {
            results[m.name] = answers[i]!;
          });
          results[supervisor!.name] = await run(supervisor!, `\n\nCombine your team's answers into one.${others(supervisor!.name)}`);
        } else {
          const first = await Promise.all(members.map((m) => run(m)));
          members.forEach((m, i) => {
            results[m.name] = first[i]!;
          });
          const rebuttals = await Promise.all(
            members.map((m) => run(m, `\n\nThe others argued:${others(m.name)}\n\nRespond and give your final position.`)),
          );
          members.forEach((m, i) => {
            results[m.name] = rebuttals[i]!;
          });
        }
        team.results = results;
        return { strategy, results };
      },
    },
    {
      name: "query_team_context",
      description: "Reads the team context of the last spawn_team: `results`, `events`, or one agent's name (its answer).",
      tier: "A",
      parameters: {
        type: "object",
        properties: { key: { type: "string", description: "results, events, or an agent's name." } },
        required: ["key"],
      },
      async run(args, ctx) {
        const team = teamOf(ctx);
        const key = String(args.key);
        if (key === "results") return team.results;
        if (key === "events") return team.events;
        if (Object.hasOwn(team.results, key)) return team.results[key]!;
        const known = Object.keys(team.results);
        throw new ToolError(`no team context '${key}' (keys: results, events${known.length ? `, ${known.join(", ")}` : ""})`);
      },
    },
  ];
}
