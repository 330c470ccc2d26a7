// Parses google.api.http path templates and flattens an HttpRule (with its additional bindings)
// into plain bindings. Pure syntax: nothing here knows about messages or fields.
import type { HttpRule } from "../../gen/google/api/http_pb.js";

/** One segment of a path template, after variables are flattened into their own segments. */
export type TemplateSegment =
  | { readonly kind: "literal"; readonly value: string }
  | { readonly kind: "wildcard" }
  | { readonly kind: "deep-wildcard" };

/** A `{field.path=...}` variable: which template segments it captures. */
export interface TemplateVariable {
  readonly fieldPath: readonly string[];
  /** Index of the first captured segment. */
  readonly start: number;
  /** Index after the last captured segment. */
  readonly end: number;
  /** True when the variable ends with `**`, so it captures every remaining request segment. */
  readonly toEnd: boolean;
}

export interface PathTemplate {
  readonly template: string;
  readonly segments: readonly TemplateSegment[];
  readonly variables: readonly TemplateVariable[];
  /** The `:verb` suffix, without the colon; "" when there is none. */
  readonly verb: string;
}

export class TemplateSyntaxError extends Error {
  override name = "TemplateSyntaxError";
  constructor(
    readonly template: string,
    reason: string,
  ) {
    super(`invalid path template "${template}": ${reason}`);
  }
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
// RFC 3986 pchar minus ":" (the verb separator) and "*" (wildcards), which a literal cannot hold.
const LITERAL = /^(?:[A-Za-z0-9\-._~!$&'()+,;=@]|%[0-9A-Fa-f]{2})+$/;

/**
 * Parses `"/" Segments [ ":" Verb ]` as google/api/http.proto defines it. `{var}` is `{var=*}`;
 * `**` may only come last; variables do not nest.
 */
export function parsePathTemplate(template: string): PathTemplate {
  const fail = (reason: string): never => {
    throw new TemplateSyntaxError(template, reason);
  };
  if (!template.startsWith("/")) fail("must start with '/'");

  // The verb is a ':' outside braces in the last segment.
  let body = template;
  let verb = "";
  let depth = 0;
  let lastSlash = -1;
  let colon = -1;
  for (let i = 0; i < template.length; i++) {
    const c = template[i];
    if (c === "{") depth++;
    else if (c === "}") depth--;
    else if (depth === 0 && c === "/") {
      lastSlash = i;
      if (colon >= 0) fail("':' is only allowed before the verb of the last segment");
    } else if (depth === 0 && c === ":") {
      if (colon >= 0) fail("more than one ':'");
      colon = i;
    }
  }
  if (colon >= 0 && colon > lastSlash) {
    verb = template.slice(colon + 1);
    body = template.slice(0, colon);
    if (!LITERAL.test(verb)) fail(`invalid verb "${verb}"`);
  }

  const segments: TemplateSegment[] = [];
  const variables: TemplateVariable[] = [];
  const seenFields = new Set<string>();
  let pos = 1;

  const parseSegment = (raw: string, inVariable: boolean): TemplateSegment => {
    if (raw === "*") return { kind: "wildcard" };
    if (raw === "**") return { kind: "deep-wildcard" };
    if (raw === "") fail("empty segment");
    if (raw.includes("{") || raw.includes("}")) {
      fail(inVariable ? "variables cannot nest" : `malformed segment "${raw}"`);
    }
    if (!LITERAL.test(raw)) fail(`invalid literal "${raw}"`);
    return { kind: "literal", value: decodeLiteral(raw) };
  };

  // "/" alone is the root: zero segments.
  while (body !== "/" && pos <= body.length) {
    if (body[pos] === "{") {
      const close = body.indexOf("}", pos);
      if (close < 0) fail("unclosed '{'");
      const inner = body.slice(pos + 1, close);
      if (inner.includes("{")) fail("variables cannot nest");
      const eq = inner.indexOf("=");
      const fieldPathText = eq < 0 ? inner : inner.slice(0, eq);
      const fieldPath = fieldPathText.split(".");
      if (!fieldPath.every((p) => IDENT.test(p))) fail(`invalid field path "${fieldPathText}"`);
      if (seenFields.has(fieldPathText)) fail(`field "${fieldPathText}" is bound twice`);
      seenFields.add(fieldPathText);
      const start = segments.length;
      const parts = eq < 0 ? ["*"] : inner.slice(eq + 1).split("/");
      for (const part of parts) segments.push(parseSegment(part, true));
      variables.push({
        fieldPath,
        start,
        end: segments.length,
        toEnd: segments[segments.length - 1]?.kind === "deep-wildcard",
      });
      pos = close + 1;
      if (pos < body.length && body[pos] !== "/") fail("a variable must span whole segments");
    } else {
      let next = body.indexOf("/", pos);
      if (next < 0) next = body.length;
      segments.push(parseSegment(body.slice(pos, next), false));
      pos = next;
    }
    if (pos === body.length) break;
    pos++; // past "/"
    if (pos === body.length) fail("trailing '/'");
  }

  const deep = segments.findIndex((s) => s.kind === "deep-wildcard");
  if (deep >= 0 && deep !== segments.length - 1) fail("'**' must be the last segment");
  return { template, segments, variables, verb };
}

function decodeLiteral(raw: string): string {
  return raw.includes("%") ? decodeURIComponent(raw) : raw;
}

/** One HTTP binding of a method: an HttpRule or one of its additional_bindings. */
export interface HttpBinding {
  /** Upper-case HTTP method. */
  readonly httpMethod: string;
  readonly path: PathTemplate;
  /** "" (no body), "*" (the whole request) or a top-level field name. */
  readonly body: string;
  /** "" (the whole response) or a top-level field name. */
  readonly responseBody: string;
}

/** Flattens a rule and its additional bindings; each becomes its own route. */
export function bindingsOfRule(rule: HttpRule): HttpBinding[] {
  const out = [bindingOf(rule)];
  for (const extra of rule.additionalBindings) {
    if (extra.additionalBindings.length > 0) {
      throw new Error("additional_bindings cannot nest additional_bindings");
    }
    out.push(bindingOf(extra));
  }
  return out;
}

function bindingOf(rule: HttpRule): HttpBinding {
  let httpMethod: string;
  let path: string;
  switch (rule.pattern.case) {
    case "get":
    case "put":
    case "post":
    case "delete":
    case "patch":
      httpMethod = rule.pattern.case.toUpperCase();
      path = rule.pattern.value;
      break;
    case "custom":
      httpMethod = rule.pattern.value.kind.toUpperCase();
      path = rule.pattern.value.path;
      if (!/^[A-Z][A-Z0-9-]*$/.test(httpMethod)) {
        throw new Error(`invalid custom HTTP method "${rule.pattern.value.kind}"`);
      }
      break;
    default:
      throw new Error("the rule has no pattern (get, put, post, delete, patch or custom)");
  }
  if (rule.body !== "" && rule.body !== "*" && !IDENT.test(rule.body)) {
    throw new Error(`body must be "*" or a top-level field name, got "${rule.body}"`);
  }
  if (rule.responseBody !== "" && !IDENT.test(rule.responseBody)) {
    throw new Error(`response_body must be a top-level field name, got "${rule.responseBody}"`);
  }
  return {
    httpMethod,
    path: parsePathTemplate(path),
    body: rule.body,
    responseBody: rule.responseBody,
  };
}
