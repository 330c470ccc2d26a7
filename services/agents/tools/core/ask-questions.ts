// ask_questions (A): puts a form of questions to the user and waits like a confirmation: a pending
// item of kind `questions` (GET /api/agents/{id}/approvals), answered by an Operator with
// `{ answers }` (or `{ decision: "cancel" }`) within Tools:Approval:TimeoutSeconds. Answers
// `{ status: answered|cancelled|unanswered, answers }`.
import type { Approvals } from "../state/approvals.js";
import { ToolError, type ToolSpec } from "../tool.js";

export const questionTypes = ["text", "confirm", "singleSelect", "multiSelect", "number"] as const;

interface Question {
  key: string;
  prompt: string;
  type: (typeof questionTypes)[number];
  required?: boolean;
  options?: string[];
  validation?: { min?: number; max?: number; pattern?: string };
}

/** The request of questionsJson, checked; ToolError naming what is wrong. */
export function parseQuestions(text: string): {
  title?: string;
  context?: string;
  questions: Question[];
  allowCancel: boolean;
  submitLabel?: string;
} {
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

export const askQuestions: ToolSpec = {
  name: "ask_questions",
  description:
    "Asks the user a form of questions and waits for the answers. questionsJson: { title, context, questions: [{ key, prompt, type (text, confirm, singleSelect, multiSelect, number), required, options, validation: { min, max } }], allowCancel, submitLabel }.",
  tier: "A",
  parameters: {
    type: "object",
    properties: { questionsJson: { type: "string", description: "The questions request as JSON text." } },
    required: ["questionsJson"],
  },
  async run(args, ctx) {
    const request = parseQuestions(String(args.questionsJson));
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
    if (answer.decision === "answered") return { status: "answered", answers: answer.answers ?? {} };
    if (answer.decision === "cancelled") return { status: "cancelled", answers: {} };
    return { status: "unanswered", answers: {} };
  },
};
