// Matches an HTTP method and raw URL path against every compiled path template at once.
// Literal segments beat `*`, which beats `**`; a path that matches under another method is a 405.
import type { PathTemplate } from "./http-rule.js";

interface TrieNode<R> {
  readonly literals: Map<string, TrieNode<R>>;
  single: TrieNode<R> | undefined;
  deep: TrieNode<R> | undefined;
  /** verb ("" for none) → HTTP method → route. */
  readonly ends: Map<string, Map<string, Entry<R>>>;
}

interface Entry<R> {
  readonly route: R;
  readonly label: string;
}

export type TrieMatch<R> =
  | {
      readonly kind: "found";
      readonly route: R;
      /** Raw (still percent-encoded) request segments, the verb removed. */
      readonly segments: readonly string[];
    }
  | {
      readonly kind: "method-not-allowed";
      /** Sorted methods that the path accepts. */
      readonly allow: readonly string[];
      /** One of the routes at this path, to pick an error style from. */
      readonly sample: R;
    }
  | { readonly kind: "not-found" };

export class RouteConflictError extends Error {
  override name = "RouteConflictError";
}

const NOT_FOUND = { kind: "not-found" } as const;

export class RouteTrie<R> {
  readonly #root: TrieNode<R> = newNode();

  /** Adds a route; throws RouteConflictError when another route has the same shape and method. */
  insert(httpMethod: string, path: PathTemplate, route: R, label: string): void {
    let node = this.#root;
    for (const seg of path.segments) {
      if (seg.kind === "literal") {
        let next = node.literals.get(seg.value);
        if (!next) node.literals.set(seg.value, (next = newNode()));
        node = next;
      } else if (seg.kind === "wildcard") {
        node = node.single ??= newNode();
      } else {
        node = node.deep ??= newNode();
      }
    }
    let byMethod = node.ends.get(path.verb);
    if (!byMethod) node.ends.set(path.verb, (byMethod = new Map()));
    const existing = byMethod.get(httpMethod);
    if (existing) {
      throw new RouteConflictError(
        `conflicting HTTP rules: ${httpMethod} ${path.template} (${label}) ` + `matches the same requests as ${existing.label}`,
      );
    }
    byMethod.set(httpMethod, { route, label });
  }

  /** `rawPath` is the URL path without the query, still percent-encoded. */
  match(httpMethod: string, rawPath: string): TrieMatch<R> {
    const all = rawPath === "/" ? [] : rawPath.slice(1).split("/");
    const decoded = rawPath.includes("%") ? all.map(safeDecode) : all;
    const allowed: Map<string, Entry<R>>[] = [];
    const last = all.length - 1;
    const colon = last >= 0 ? all[last]!.lastIndexOf(":") : -1;
    if (colon > 0) {
      // A verb is tried first; a template without one may still own the whole segment.
      const segments = all.slice();
      segments[last] = all[last]!.slice(0, colon);
      const dec = decoded === all ? segments : decoded.slice();
      if (dec !== segments) dec[last] = safeDecode(segments[last]!);
      const verb = safeDecode(all[last]!.slice(colon + 1));
      const hit = walk(this.#root, segments, dec, 0, verb, httpMethod, allowed);
      if (hit) return { kind: "found", route: hit.route, segments };
    }
    const hit = walk(this.#root, all, decoded, 0, "", httpMethod, allowed);
    if (hit) return { kind: "found", route: hit.route, segments: all };
    if (allowed.length === 0) return NOT_FOUND;
    const methods = new Set<string>();
    for (const byMethod of allowed) for (const m of byMethod.keys()) methods.add(m);
    return {
      kind: "method-not-allowed",
      allow: [...methods].sort(),
      sample: allowed[0]!.values().next().value!.route,
    };
  }
}

function newNode<R>(): TrieNode<R> {
  return { literals: new Map(), single: undefined, deep: undefined, ends: new Map() };
}

function walk<R>(
  node: TrieNode<R>,
  raw: readonly string[],
  decoded: readonly string[],
  i: number,
  verb: string,
  httpMethod: string,
  allowed: Map<string, Entry<R>>[],
): Entry<R> | undefined {
  if (i === raw.length) {
    const hit = endOf(node, verb, httpMethod, allowed);
    if (hit) return hit;
  } else {
    const literal = node.literals.get(decoded[i]!);
    if (literal) {
      const hit = walk(literal, raw, decoded, i + 1, verb, httpMethod, allowed);
      if (hit) return hit;
    }
    // Wildcards never capture an empty segment: "/things/" is not "/things/{id}".
    if (node.single && raw[i] !== "") {
      const hit = walk(node.single, raw, decoded, i + 1, verb, httpMethod, allowed);
      if (hit) return hit;
    }
  }
  if (node.deep) {
    for (let j = i; j < raw.length; j++) if (raw[j] === "") return undefined;
    return endOf(node.deep, verb, httpMethod, allowed);
  }
  return undefined;
}

function endOf<R>(node: TrieNode<R>, verb: string, httpMethod: string, allowed: Map<string, Entry<R>>[]): Entry<R> | undefined {
  const byMethod = node.ends.get(verb);
  if (!byMethod) return undefined;
  const hit = byMethod.get(httpMethod);
  if (!hit) allowed.push(byMethod);
  return hit;
}

function safeDecode(segment: string): string {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    // Malformed escapes cannot equal a literal; variable binding reports them as a 400.
    return segment;
  }
}
