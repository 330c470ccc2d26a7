// Enforces `(google.api.field_behavior) = REQUIRED` from the contract on every incoming request,
// so no handler repeats presence checks. Violations name the field by its proto path
// (`order.placed_at`); the gateway renders that in each front's JSON naming.
import { getOption, isFieldSet, type DescMessage, type Message } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { FieldBehavior, field_behavior } from "../../../gen/google/api/field_behavior_pb.js";
import { invalidArgument, type FieldViolation } from "../errors/index.js";

interface RequiredPlan {
  /** Required fields of this message. */
  required: DescMessage["fields"];
  /** Singular message fields whose type (transitively) has required fields. */
  nested: { field: DescMessage["fields"][number]; plan: RequiredPlan }[];
}

const plans = new Map<string, RequiredPlan | null>();

/** The checks for a message type, or null when nothing in it is required (the common fast path). */
function planFor(schema: DescMessage, visiting = new Set<string>()): RequiredPlan | null {
  const cached = plans.get(schema.typeName);
  if (cached !== undefined) return cached;
  if (visiting.has(schema.typeName)) return null;
  visiting.add(schema.typeName);
  const required = schema.fields.filter((f) => getOption(f, field_behavior).includes(FieldBehavior.REQUIRED));
  const nested: RequiredPlan["nested"] = [];
  for (const field of schema.fields) {
    if (field.fieldKind !== "message") continue;
    const plan = planFor(field.message, visiting);
    if (plan) nested.push({ field, plan });
  }
  const plan = required.length || nested.length ? { required, nested } : null;
  plans.set(schema.typeName, plan);
  return plan;
}

function collect(message: Message, plan: RequiredPlan, prefix: string, out: FieldViolation[]): void {
  for (const field of plan.required) {
    if (!isFieldSet(message, field)) out.push({ field: prefix + field.name, description: "is required" });
  }
  for (const { field, plan: inner } of plan.nested) {
    if (isFieldSet(message, field)) {
      const value = (message as unknown as Record<string, unknown>)[field.localName] as Message;
      collect(value, inner, `${prefix}${field.name}.`, out);
    }
  }
}

/** The missing required fields of a message, by proto path. */
export function missingRequiredFields(schema: DescMessage, message: Message): FieldViolation[] {
  const plan = planFor(schema);
  if (!plan) return [];
  const out: FieldViolation[] = [];
  collect(message, plan, "", out);
  return out;
}

/** Server interceptor: InvalidArgument naming every missing required field, before the handler runs. */
export const requiredFieldsInterceptor: Interceptor = (next) => (req) => {
  if (!req.stream) {
    const missing = missingRequiredFields(req.method.input, req.message);
    // A rejection, not a throw: interceptors answer with a promise either way.
    if (missing.length) return Promise.reject(invalidArgument(missing));
  }
  // Not async: a call that passes costs no promise of its own.
  return next(req);
};
