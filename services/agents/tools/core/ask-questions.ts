// ask_questions (A): puts a form of questions to the user and waits like a confirmation, within
// Tools:Approval:TimeoutSeconds, answering `{ status: answered|cancelled|unanswered, answers }`.
// Two ways to ask:
// - On a /hubs/agent turn, the hub client: the server invokes its method `AskQuestions({ approvalId,
//   agentId, title, context, questions, allowCancel, submitLabel })`; its SignalR result `{ answers }`
//   is answered, `{ cancelled: true }` cancelled (unanswered when allowCancel is false), anything
//   else (null, an error, a closed connection, no result in time) unanswered.
// - Otherwise a pending item of kind `questions` (GET /api/agents/{id}/approvals), answered by an
//   Operator with `{ answers }` (or `{ decision: "cancel" }`).
// Both check the answers against the questions with `answersProblem` (the approvals' decide uses it
// too: answers that do not fit are a 400 there, and unanswered with a `reason` from a hub client).
// A turn hands its hub asker to the dispatcher (`InvokeRequest.askQuestions`), which puts it in the
// tool's context.
import type { Approvals } from "../state/approvals.js";
import { ToolError, type ToolContext, type ToolSpec } from "../tool.js";

export const questionTypes = ["text", "confirm", "singleSelect", "multiSelect", "number"] as const;

export interface Question {
  key: string;
  prompt: string;
  type: (typeof questionTypes)[number];
  required?: boolean;
  options?: string[];
  validation?: { min?: number; max?: number; pattern?: string };
}

/** The request of questionsJson, checked: what the user (or the hub client) is shown. */
export interface QuestionsRequest {
  title?: string;
  context?: string;
  questions: Question[];
  allowCancel: boolean;
  submitLabel?: string;
}

/**
 * Puts a request to a connected client and resolves with its raw answer: null when it fails, the
 * signal aborts or it gives none in time (the caller bounds it by Tools:Approval:TimeoutSeconds).
 */
export type QuestionsAsker = (request: QuestionsRequest, signal: AbortSignal) => Promise<unknown>;

export interface QuestionsResult {
  status: "answered" | "cancelled" | "unanswered";
  answers: Record<string, unknown>;
  /** Only when a hub client's answers did not fit the questions. */
  reason?: string;
  [field: string]: unknown;
}

/** The request of questionsJson, checked; ToolError naming what is wrong. */
export function parseQuestions(text: string): QuestionsRequest {
  let request: unknown;
  try {
    request = JSON.parse(text);
  } catch {
    throw new ToolError("questionsJson is not valid JSON");
  }
  if (typeof request !== "object" || request === null || Array.isArray(request)) throw new ToolError("questionsJson must be a JSON object");
  const r = request as Record<string, unknown>;
  if (!Array.isArray(r.questions) || r.questions.length === 0) throw new ToolError("questionsJson needs a non-empty questions array");
  const keys = new Set<string>();
  const questions = r.questions.map((raw, i) => {
    const q = raw as Partial<Question>;
    if (typeof q !== "object" || q === null) throw new ToolError(`questions[${i}] must be an object`);
    if (typeof q.key !== "string" || q.key === "") throw new ToolError(`questions[${i}].key must be a non-empty string`);
    if (keys.has(q.key)) throw new ToolError(`questions[${i}].key '${q.key}' is repeated`);
    keys.add(q.key);
    if (typeof q.prompt !== "string" || q.prompt === "") throw new ToolError(`questions[${i}].prompt must be a non-empty string`);
    const type = q.type ?? "text";
    if (!questionTypes.includes(type)) throw new ToolError(`questions[${i}].type must be one of ${questionTypes.join(", ")}`);
    if ((type === "singleSelect" || type === "multiSelect") && (!Array.isArray(q.options) || q.options.length === 0))
      throw new ToolError(`questions[${i}] (${type}) needs options`);
    if (q.options !== undefined && (!Array.isArray(q.options) || q.options.some((o) => typeof o !== "string")))
      throw new ToolError(`questions[${i}].options must be strings`);
    checkValidation(q.validation, i);
    return { ...q, type } as Question;
  });
  return {
    ...(typeof r.title === "string" ? { title: r.title } : {}),
    ...(typeof r.context === "string" ? { context: r.context } : {}),
    questions,
    allowCancel: r.allowCancel !== false,
    ...(typeof r.submitLabel === "string" ? { submitLabel: r.submitLabel } : {}),
  };
}

function checkValidation(validation: unknown, i: number): void {
  if (validation === undefined) return;
  if (typeof validation !== "object" || validation === null || Array.isArray(validation))
    throw new ToolError(`questions[${i}].validation must be an object`);
  const v = validation as Record<string, unknown>;
  for (const bound of ["min", "max"] as const)
    if (v[bound] !== undefined && (typeof v[bound] !== "number" || !Number.isFinite(v[bound])))
      throw new ToolError(`questions[${i}].validation.${bound} must be a number`);
  if (v.pattern !== undefined) {
    if (typeof v.pattern !== "string") throw new ToolError(`questions[${i}].validation.pattern must be a string`);
    try {
      new RegExp(v.pattern);
    } catch {
      throw new ToolError(`questions[${i}].validation.pattern is not a valid regular expression`);
    }
  }
}

/**
 * What is wrong with `answers` for `questions`, or undefined when they fit: an object keyed by the
 * questions' keys, every required question answered, each answer of its question's type (text a
 * string matching its pattern, confirm a boolean, number a number within min and max, singleSelect
 * one of the options, multiSelect distinct options). The message names keys, never a value given.
 */
export function answersProblem(questions: readonly Question[], answers: unknown): string | undefined {
  if (typeof answers !== "object" || answers === null || Array.isArray(answers))
    return "answers must be an object keyed by the questions' keys";
  const given = answers as Record<string, unknown>;
  const keys = new Set(questions.map((q) => q.key));
  const unknown = Object.keys(given).find((key) => !keys.has(key));
  if (unknown !== undefined) return `answers.${unknown} is not one of the questions (${[...keys].join(", ")})`;
  for (const q of questions) {
    const at = `answers.${q.key}`;
    const value = given[q.key];
    if (value === undefined || value === null || value === "" || (Array.isArray(value) && value.length === 0)) {
      if (q.required === true) return `${at} is required`;
      continue;
    }
    const { min, max, pattern } = q.validation ?? {};
    switch (q.type) {
      case "text":
        if (typeof value !== "string") return `${at} must be a string`;
        if (pattern !== undefined && !new RegExp(pattern).test(value)) return `${at} does not match the pattern ${pattern}`;
        break;
      case "confirm":
        if (typeof value !== "boolean") return `${at} must be true or false`;
        break;
      case "number":
        if (typeof value !== "number" || !Number.isFinite(value)) return `${at} must be a number`;
        if (min !== undefined && value < min) return `${at} must be at least ${min}`;
        if (max !== undefined && value > max) return `${at} must be at most ${max}`;
        break;
      case "singleSelect":
        if (typeof value !== "string" || !q.options?.includes(value)) return `${at} must be one of ${q.options?.join(", ")}`;
        break;
      case "multiSelect":
        if (!Array.isArray(value) || value.some((v) => typeof v !== "string" || !q.options?.includes(v)))
          return `${at} must be a list of ${q.options?.join(", ")}`;
        if (new Set(value).size !== value.length) return `${at} repeats an option`;
        break;
    }
  }
  return undefined;
}

const unanswered = (): QuestionsResult => ({ status: "unanswered", answers: {} });

/** A hub client's SignalR result as the tool's answer. */
export function clientResult(request: QuestionsRequest, result: unknown): QuestionsResult {
  if (typeof result !== "object" || result === null || Array.isArray(result)) return unanswered();
  const r = result as Record<string, unknown>;
  if (r.cancelled === true) return request.allowCancel ? { status: "cancelled", answers: {} } : unanswered();
  if (r.answers === undefined || r.answers === null) return unanswered();
  const problem = answersProblem(request.questions, r.answers);
  if (problem) return { ...unanswered(), reason: `the client's answers do not fit the questions: ${problem}` };
  return { status: "answered", answers: r.answers as Record<string, unknown> };
}

async function askPending(request: QuestionsRequest, ctx: ToolContext): Promise<QuestionsResult> {
  const approvals = ctx.services.approvals as Approvals | undefined;
  if (!ctx.agentId || !approvals) throw new ToolError("ask_questions needs a calling agent to put the questions to its user");
  const answer = await approvals.ask(
    {
      agentId: ctx.agentId,
      sessionId: ctx.sessionId,
      kind: "questions",
      tool: "ask_questions",
      canonical: "ask_questions",
      tier: "A",
      arguments: request,
    },
    ctx.signal,
  );
  // decide() has checked the answers against the questions.
  if (answer.decision === "answered") return { status: "answered", answers: (answer.answers ?? {}) as Record<string, unknown> };
  if (answer.decision === "cancelled") return { status: "cancelled", answers: {} };
  return unanswered();
}

export const askQuestions: ToolSpec = {
  name: "ask_questions",
  description:
    "Asks the user a form of questions and waits for the answers. questionsJson: { title, context, questions: [{ key, prompt, type (text, confirm, singleSelect, multiSelect, number), required, options, validation: { min, max, pattern } }], allowCancel, submitLabel }.",
  tier: "A",
  parameters: {
    type: "object",
    properties: { questionsJson: { type: "string", description: "The questions request as JSON text." } },
    required: ["questionsJson"],
  },
  async run(args, ctx) {
    const request = parseQuestions(String(args.questionsJson));
    const asker = ctx.askQuestions;
    if (!asker) return askPending(request, ctx);
    return clientResult(request, await asker(request, ctx.signal).catch(() => null));
  },
};
