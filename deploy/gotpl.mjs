// A small Go text/template engine with the Helm and Sprig functions the Meshwork chart uses, so
// deploy/check.mjs can render the chart where no `helm` binary exists. It follows Go's rules
// where they bite charts in practice (whitespace trimming, nil field errors, int vs float
// comparison, float64 values printing as 1e+06); it is not Helm. `helm template` wins when present.
import { createHash } from "node:crypto";

export class TemplateError extends Error {
  name = "TemplateError";
}

// Numbers from values.yaml are float64 in Helm (JS number); template literals and `int` give Go
// ints, represented as BigInt so that mixing the two fails the way Go's comparisons do.
const isInt = (v) => typeof v === "bigint";
const isMap = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

export function goFloat(n) {
  if (Number.isNaN(n)) return "NaN";
  if (!Number.isFinite(n)) return n > 0 ? "+Inf" : "-Inf";
  if (n === 0) return "0";
  const [mant, e] = n.toExponential().split("e");
  const exp = Number(e);
  // fmt's %v is strconv 'g' with the shortest precision: exponent form from 1e+06 up.
  if (exp < -4 || exp >= 6) return `${mant}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  return String(n);
}

export function goString(v) {
  if (v === null || v === undefined) return ""; // Helm replaces "<no value>" with ""
  if (typeof v === "string") return v;
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") return goFloat(v);
  if (typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return `[${v.map(goString).join(" ")}]`;
  if (isMap(v))
    return `map[${Object.keys(v)
      .sort()
      .map((k) => `${k}:${goString(v[k])}`)
      .join(" ")}]`;
  return String(v);
}

const truthy = (v) =>
  !(
    v === null ||
    v === undefined ||
    v === false ||
    v === "" ||
    v === 0 ||
    v === 0n ||
    (Array.isArray(v) && v.length === 0) ||
    (isMap(v) && Object.keys(v).length === 0)
  );

const plain = (v) =>
  isInt(v)
    ? Number(v)
    : Array.isArray(v)
      ? v.map(plain)
      : isMap(v)
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, plain(v[k])]),
          )
        : v;

function goPrintf(format, args) {
  let i = 0;
  return format.replace(/%([-+# 0]*\d*(?:\.\d+)?)([a-zA-Z%])/g, (_, _flags, verb) => {
    if (verb === "%") return "%";
    if (i >= args.length) return `%!${verb}(MISSING)`;
    const a = args[i++];
    const kind =
      a === null || a === undefined
        ? "<nil>"
        : isInt(a)
          ? "int"
          : typeof a === "number"
            ? "float64"
            : typeof a === "string"
              ? "string"
              : typeof a;
    switch (verb) {
      case "v":
        return goString(a);
      case "s":
        return typeof a === "string" ? a : `%!s(${kind}=${goString(a)})`;
      case "d":
        return isInt(a) ? a.toString() : `%!d(${kind}=${goString(a)})`;
      case "q":
        return typeof a === "string" ? JSON.stringify(a) : `%!q(${kind}=${goString(a)})`;
      default:
        return goString(a);
    }
  });
}

function compare(name, a, b) {
  const kindOf = (v) =>
    isInt(v) ? "int" : typeof v === "number" ? "float" : typeof v === "string" ? "string" : typeof v === "boolean" ? "bool" : "other";
  if (kindOf(a) !== kindOf(b))
    throw new TemplateError(`error calling ${name}: incompatible types for comparison (${kindOf(a)} and ${kindOf(b)})`);
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Functions: Go's builtins and the Sprig/Helm ones the chart needs. `ctx` renders templates. */
function functions(ctx) {
  const toInt = (v) => {
    if (isInt(v)) return v;
    if (typeof v === "number") return BigInt(Math.trunc(v));
    if (typeof v === "string" && /^-?\d+$/.test(v.trim())) return BigInt(v.trim());
    if (typeof v === "boolean") return v ? 1n : 0n;
    return 0n;
  };
  const str = (v) => goString(v);
  return {
    // Go text/template builtins
    and: null,
    or: null, // short-circuit; handled in evalCommand
    not: (v) => !truthy(v),
    // Go: nil equals only nil; other mixed kinds (int vs float64, too) are an error. `== null` is
    // deliberate: a missing key (undefined) and an explicit null are both Go's nil.
    eq: (a, ...bs) => bs.some((b) => (a == null || b == null ? a === b : compare("eq", a, b) === 0)),
    ne: (a, b) => (a == null || b == null ? a !== b : compare("ne", a, b) !== 0),
    lt: (a, b) => compare("lt", a, b) < 0,
    le: (a, b) => compare("le", a, b) <= 0,
    gt: (a, b) => compare("gt", a, b) > 0,
    ge: (a, b) => compare("ge", a, b) >= 0,
    len: (v) => BigInt(typeof v === "string" || Array.isArray(v) ? v.length : isMap(v) ? Object.keys(v).length : 0),
    index: (c, ...keys) =>
      keys.reduce((acc, k) => {
        if (acc === null || acc === undefined) throw new TemplateError("error calling index: index of untyped nil");
        return Array.isArray(acc) ? acc[Number(k)] : acc[k];
      }, c),
    print: (...a) => a.map(str).join(""),
    printf: (f, ...a) => goPrintf(f, a),
    // Sprig
    default: (d, ...given) => (given.length && truthy(given[0]) ? given[0] : d),
    empty: (v) => !truthy(v),
    required: (msg, v) => {
      if (v === null || v === undefined || v === "") throw new TemplateError(`execution error: ${msg}`);
      return v;
    },
    fail: (msg) => {
      throw new TemplateError(`execution error: ${msg}`);
    },
    quote: (...a) =>
      a
        .filter((v) => v !== null && v !== undefined)
        .map((v) => JSON.stringify(str(v)))
        .join(" "),
    squote: (...a) =>
      a
        .filter((v) => v !== null && v !== undefined)
        .map((v) => `'${str(v)}'`)
        .join(" "),
    trunc: (n, s) => {
      const c = Number(n);
      return c >= 0 ? str(s).slice(0, c) : str(s).slice(c);
    },
    trimSuffix: (suffix, s) => (str(s).endsWith(suffix) ? str(s).slice(0, -suffix.length || undefined) : str(s)),
    trimPrefix: (prefix, s) => (str(s).startsWith(prefix) ? str(s).slice(prefix.length) : str(s)),
    trim: (s) => str(s).trim(),
    replace: (o, n, s) => str(s).split(o).join(n),
    lower: (s) => str(s).toLowerCase(),
    upper: (s) => str(s).toUpperCase(),
    contains: (sub, s) => str(s).includes(sub),
    hasPrefix: (p, s) => str(s).startsWith(p),
    hasSuffix: (p, s) => str(s).endsWith(p),
    hasKey: (m, k) => isMap(m) && Object.hasOwn(m, k),
    list: (...a) => a,
    // Sprig compares with reflect.DeepEqual: different kinds are simply unequal, never an error.
    has: (needle, l) => (l ?? []).some((x) => x === needle),
    dict: (...a) => {
      const o = {};
      for (let i = 0; i < a.length; i += 2) o[str(a[i])] = a[i + 1];
      return o;
    },
    int: toInt,
    int64: toInt,
    toString: str,
    ternary: (a, b, c) => (truthy(c) ? a : b),
    coalesce: (...a) => a.find(truthy),
    join: (sep, l) => (l ?? []).map(str).join(sep),
    indent: (n, s) => {
      const pad = " ".repeat(Number(n));
      return pad + str(s).replaceAll("\n", `\n${pad}`);
    },
    nindent: (n, s) => {
      const pad = " ".repeat(Number(n));
      return `\n${pad}${str(s).replaceAll("\n", `\n${pad}`)}`;
    },
    b64enc: (s) => Buffer.from(str(s)).toString("base64"),
    sha256sum: (s) => createHash("sha256").update(str(s)).digest("hex"),
    toJson: (v) => JSON.stringify(plain(v) ?? null),
    toPrettyJson: (v) => JSON.stringify(plain(v) ?? null, null, 2),
    toYaml: (v) => (v === null || v === undefined ? "null" : ctx.toYaml(plain(v)).replace(/\n$/, "")),
    include: (name, data) => ctx.execute(name, data),
    kindIs: (k, v) =>
      ({
        map: isMap(v),
        slice: Array.isArray(v),
        string: typeof v === "string",
        bool: typeof v === "boolean",
        int: isInt(v),
        float64: typeof v === "number",
        invalid: v == null,
      })[k] ?? false,
  };
}

// ---------------------------------------------------------------- lexing and parsing

function lexAction(src, where) {
  const tokens = [];
  let i = 0;
  const at = () => `${where}: in action {{${src}}}`;
  // `(x).Field` is a field of x only when nothing separates them; `(x) .Field` is two operands.
  const push = (tk) => tokens.push({ ...tk, spaced: i > 0 && /\s/.test(src[i - 1]) });
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === "(" || c === ")" || c === "|" || c === ",") {
      push({ t: c });
      i++;
      continue;
    }
    if (src.startsWith(":=", i)) {
      push({ t: ":=" });
      i += 2;
      continue;
    }
    if (c === "=") {
      push({ t: "=" });
      i++;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      while (j < src.length && src[j] !== '"') j += src[j] === "\\" ? 2 : 1;
      if (j >= src.length) throw new TemplateError(`${at()}: unterminated string`);
      push({ t: "str", v: JSON.parse(src.slice(i, j + 1)) });
      i = j + 1;
      continue;
    }
    if (c === "`") {
      const j = src.indexOf("`", i + 1);
      if (j < 0) throw new TemplateError(`${at()}: unterminated raw string`);
      push({ t: "str", v: src.slice(i + 1, j) });
      i = j + 1;
      continue;
    }
    const num = /^-?\d+(\.\d+)?([eE][-+]?\d+)?/.exec(src.slice(i));
    if (num && (c !== "-" || /\d/.test(src[i + 1] ?? ""))) {
      push({ t: "num", v: num[1] || num[2] ? Number(num[0]) : BigInt(num[0]) });
      i += num[0].length;
      continue;
    }
    if (c === "$") {
      const v = /^\$[A-Za-z0-9_]*/.exec(src.slice(i))[0];
      const path = /^(?:\.[A-Za-z_][A-Za-z0-9_]*)*/.exec(src.slice(i + v.length))[0];
      push({ t: "var", name: v, path: path ? path.slice(1).split(".") : [] });
      i += v.length + path.length;
      continue;
    }
    if (c === ".") {
      const f = /^(?:\.[A-Za-z_][A-Za-z0-9_]*)+/.exec(src.slice(i));
      if (f) push({ t: "field", path: f[0].slice(1).split(".") });
      else push({ t: "dot" });
      i += f ? f[0].length : 1;
      continue;
    }
    const id = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i));
    if (id) {
      const w = id[0];
      push(w === "true" || w === "false" ? { t: "bool", v: w === "true" } : w === "nil" ? { t: "nil" } : { t: "id", v: w });
      i += w.length;
      continue;
    }
    throw new TemplateError(`${at()}: unexpected character '${c}'`);
  }
  return tokens;
}

function parsePipeline(tokens, where) {
  let pos = 0;
  const peek = () => tokens[pos];
  const decl = [];
  // `$x :=`, `$x =`, `$i, $v :=`
  const save = pos;
  while (peek()?.t === "var" && peek().path.length === 0) {
    decl.push(tokens[pos++].name);
    if (peek()?.t === ",") {
      pos++;
      continue;
    }
    break;
  }
  let assign = null;
  if (decl.length && (peek()?.t === ":=" || peek()?.t === "=")) assign = tokens[pos++].t;
  else {
    decl.length = 0;
    pos = save;
  }

  function operand() {
    const tk = tokens[pos++];
    if (!tk) throw new TemplateError(`${where}: missing operand`);
    if (tk.t === "(") {
      const inner = pipeline(true);
      if (tokens[pos++]?.t !== ")") throw new TemplateError(`${where}: unclosed (`);
      let path = [];
      if (peek()?.t === "field" && !peek().spaced) path = tokens[pos++].path;
      return { k: "sub", pipe: inner, path };
    }
    if (tk.t === ")" || tk.t === "|") throw new TemplateError(`${where}: unexpected ${tk.t}`);
    return tk;
  }
  function command() {
    const args = [];
    while (pos < tokens.length && peek().t !== "|" && peek().t !== ")") args.push(operand());
    if (!args.length) throw new TemplateError(`${where}: empty command`);
    return args;
  }
  function pipeline(nested) {
    const cmds = [command()];
    while (peek()?.t === "|") {
      pos++;
      cmds.push(command());
    }
    if (!nested && pos < tokens.length) throw new TemplateError(`${where}: unexpected ${peek().t}`);
    return { cmds, decl: [], assign: null };
  }
  const p = pipeline(false);
  return { ...p, decl, assign };
}

/** Splits a template into text and actions, applying {{- and -}} trimming. */
function lex(text, name) {
  const items = [];
  let i = 0;
  let line = 1;
  while (i < text.length) {
    const open = text.indexOf("{{", i);
    if (open < 0) {
      items.push({ k: "text", v: text.slice(i) });
      break;
    }
    let before = text.slice(i, open);
    let j = open + 2;
    const trimLeft = /^-\s/.test(text.slice(j, j + 2));
    if (trimLeft) {
      before = before.replace(/\s+$/, "");
      j += 1;
    }
    if (before) items.push({ k: "text", v: before });
    line += text.slice(i, open).split("\n").length - 1;
    const where = `${name}:${line}`;
    let body;
    let close;
    const rest = text.slice(j).replace(/^\s*/, "");
    if (rest.startsWith("/*")) {
      const end = text.indexOf("*/", j);
      if (end < 0) throw new TemplateError(`${where}: unclosed comment`);
      close = text.indexOf("}}", end);
      if (!/^\*\/\s*-?\s*$/.test(text.slice(end, close))) throw new TemplateError(`${where}: comment ends without closing delimiter`);
      body = null;
    } else {
      // Find the closing }} outside string literals.
      let q = null;
      close = -1;
      for (let k = j; k < text.length - 1; k++) {
        const ch = text[k];
        if (q) {
          if (ch === "\\" && q === '"') k++;
          else if (ch === q) q = null;
          continue;
        }
        if (ch === '"' || ch === "`") {
          q = ch;
          continue;
        }
        if (ch === "}" && text[k + 1] === "}") {
          close = k;
          break;
        }
      }
      if (close < 0) throw new TemplateError(`${where}: unclosed action`);
      body = text.slice(j, close);
    }
    // A right trim marker is whitespace then "-" just before the closing }}.
    const raw = text.slice(j, close);
    const trimRight = /\s-$/.test(raw);
    const inner = trimRight && body !== null ? raw.slice(0, -1) : (body ?? "");
    line += text.slice(open, close + 2).split("\n").length - 1;
    i = close + 2;
    if (trimRight) {
      const m = /^\s*/.exec(text.slice(i));
      i += m[0].length;
      line += m[0].split("\n").length - 1;
    }
    if (body !== null) items.push({ k: "action", v: inner.trim(), where });
  }
  return items;
}

function parse(text, name, defines) {
  const items = lex(text, name);
  let pos = 0;
  function list(stops) {
    const nodes = [];
    while (pos < items.length) {
      const it = items[pos];
      if (it.k === "text") {
        nodes.push(it);
        pos++;
        continue;
      }
      const word = /^(\w+)\b\s*(.*)$/s.exec(it.v);
      const kw = word?.[1];
      if (kw && stops.includes(kw)) return { nodes, stop: it };
      pos++;
      if (kw === "if" || kw === "with" || kw === "range") {
        nodes.push(control(kw, word[2], it.where));
      } else if (kw === "define") {
        const dname = JSON.parse(word[2].trim());
        const body = list(["end"]);
        if (!body.stop) throw new TemplateError(`${it.where}: define "${dname}" has no end`);
        pos++;
        defines.set(dname, body.nodes);
      } else if (kw === "template") {
        const tks = lexAction(word[2], it.where);
        const tname = tks.shift();
        nodes.push({ k: "template", name: tname.v, pipe: tks.length ? parsePipeline(tks, it.where) : null, where: it.where });
      } else if (kw === "end" || kw === "else") {
        throw new TemplateError(`${it.where}: unexpected {{${kw}}}`);
      } else {
        nodes.push({ k: "action", pipe: parsePipeline(lexAction(it.v, it.where), it.where), where: it.where });
      }
    }
    if (stops.length) throw new TemplateError(`${name}: unexpected EOF, expected {{${stops.join("|")}}}`);
    return { nodes, stop: null };
  }
  function control(kw, rest, where) {
    const pipe = parsePipeline(lexAction(rest, where), where);
    const body = list(["else", "end"]);
    let elseNodes = null;
    if (body.stop.v.startsWith("else")) {
      const chained = /^else\s+(if|with)\s+(.*)$/s.exec(body.stop.v);
      pos++;
      if (chained) {
        elseNodes = [control(chained[1], chained[2], body.stop.where)];
        return { k: kw, pipe, body: body.nodes, elseNodes, where };
      }
      const eb = list(["end"]);
      elseNodes = eb.nodes;
    }
    pos++; // the {{end}}
    return { k: kw, pipe, body: body.nodes, elseNodes, where };
  }
  return list([]).nodes;
}

// ---------------------------------------------------------------- execution

class Scope {
  constructor(parent, vars = {}) {
    this.parent = parent;
    this.vars = new Map(Object.entries(vars));
  }
  get(name, where) {
    for (let s = this; s; s = s.parent) if (s.vars.has(name)) return s.vars.get(name);
    throw new TemplateError(`${where}: undefined variable "${name}"`);
  }
  set(name, v, where) {
    for (let s = this; s; s = s.parent)
      if (s.vars.has(name)) {
        s.vars.set(name, v);
        return;
      }
    throw new TemplateError(`${where}: undefined variable "${name}"`);
  }
}

function field(base, path, where, label) {
  let v = base;
  for (const p of path) {
    if (v === null || v === undefined)
      throw new TemplateError(`${where}: nil pointer evaluating interface {}.${p} (${label}.${path.join(".")})`);
    if (!isMap(v)) throw new TemplateError(`${where}: can't evaluate field ${p} in type ${Array.isArray(v) ? "[]interface {}" : typeof v}`);
    v = v[p];
  }
  return v;
}

export class Engine {
  constructor({ toYaml }) {
    this.defines = new Map();
    this.toYaml = toYaml;
    this.fns = functions(this);
    this.depth = 0;
  }
  /** Parses a file; its {{define}}s are registered and it is callable by `name`. */
  add(name, text) {
    this.defines.set(name, parse(text, name, this.defines));
  }
  execute(name, data) {
    const nodes = this.defines.get(name);
    if (!nodes) throw new TemplateError(`template: no template "${name}" associated with template`);
    if (++this.depth > 100) throw new TemplateError(`template "${name}": exceeded maximum template depth`);
    try {
      return this.run(nodes, data, new Scope(null, { $: data }));
    } finally {
      this.depth--;
    }
  }
  run(nodes, dot, scope) {
    let out = "";
    for (const n of nodes) {
      switch (n.k) {
        case "text":
          out += n.v;
          break;
        case "action": {
          const v = this.pipe(n.pipe, dot, scope, n.where);
          if (!n.pipe.decl.length) out += goString(v);
          break;
        }
        case "template":
          out += this.execute(n.name, n.pipe ? this.pipe(n.pipe, dot, scope, n.where) : null);
          break;
        case "if":
        case "with": {
          const inner = new Scope(scope);
          const v = this.pipe(n.pipe, dot, inner, n.where);
          if (truthy(v)) out += this.run(n.body, n.k === "with" ? v : dot, inner);
          else if (n.elseNodes) out += this.run(n.elseNodes, dot, new Scope(scope));
          break;
        }
        case "range": {
          const inner = new Scope(scope);
          const decl = n.pipe.decl;
          const v = this.pipe({ ...n.pipe, decl: [] }, dot, inner, n.where);
          const entries = Array.isArray(v)
            ? v.map((x, i) => [BigInt(i), x])
            : isMap(v)
              ? Object.keys(v)
                  .sort()
                  .map((k) => [k, v[k]])
              : isInt(v)
                ? Array.from({ length: Number(v) }, (_, i) => [BigInt(i), BigInt(i)])
                : [];
          if (v !== null && v !== undefined && !Array.isArray(v) && !isMap(v) && !isInt(v))
            throw new TemplateError(`${n.where}: range can't iterate over ${goString(v)}`);
          if (!entries.length) {
            if (n.elseNodes) out += this.run(n.elseNodes, dot, new Scope(scope));
            break;
          }
          for (const [k, x] of entries) {
            const s = new Scope(inner);
            if (decl.length === 1) s.vars.set(decl[0], x);
            if (decl.length === 2) {
              s.vars.set(decl[0], k);
              s.vars.set(decl[1], x);
            }
            out += this.run(n.body, x, s);
          }
          break;
        }
        default:
          throw new TemplateError(`unknown node ${n.k}`);
      }
    }
    return out;
  }
  pipe(p, dot, scope, where) {
    let v;
    let first = true;
    for (const cmd of p.cmds) {
      v = this.command(cmd, dot, scope, where, first ? [] : [v]);
      first = false;
    }
    if (p.decl.length) {
      if (p.assign === ":=") scope.vars.set(p.decl[0], v);
      else scope.set(p.decl[0], v, where);
    }
    return v;
  }
  operand(o, dot, scope, where) {
    switch (o.t ?? o.k) {
      case "str":
      case "num":
      case "bool":
        return o.v;
      case "nil":
        return null;
      case "dot":
        return dot;
      case "field":
        return field(dot, o.path, where, "");
      case "var":
        return field(scope.get(o.name, where), o.path, where, o.name);
      case "sub":
        return field(this.pipe(o.pipe, dot, scope, where), o.path, where, "(...)");
      case "id": {
        if (!(o.v in this.fns)) throw new TemplateError(`${where}: function "${o.v}" not defined`);
        return this.call(o.v, [], where);
      }
      default:
        throw new TemplateError(`${where}: bad operand ${o.t}`);
    }
  }
  command(args, dot, scope, where, piped) {
    const [head, ...rest] = args;
    if (head.t === "id") {
      if (!(head.v in this.fns)) throw new TemplateError(`${where}: function "${head.v}" not defined`);
      if (head.v === "and" || head.v === "or") {
        const thunks = [...rest.map((o) => () => this.operand(o, dot, scope, where)), ...piped.map((x) => () => x)];
        let v;
        for (const t of thunks) {
          v = t();
          if (head.v === "and" ? !truthy(v) : truthy(v)) return v;
        }
        return v;
      }
      const values = [...rest.map((o) => this.operand(o, dot, scope, where)), ...piped];
      return this.call(head.v, values, where);
    }
    if (rest.length || piped.length) throw new TemplateError(`${where}: can't give argument to non-function ${head.t}`);
    return this.operand(head, dot, scope, where);
  }
  call(name, values, where) {
    try {
      return this.fns[name](...values);
    } catch (err) {
      if (err instanceof TemplateError && err.message.startsWith("execution error")) throw new TemplateError(`${where}: ${err.message}`);
      if (err instanceof TemplateError) throw new TemplateError(`${where}: ${err.message}`);
      throw new TemplateError(`${where}: error calling ${name}: ${err.message}`);
    }
  }
}
