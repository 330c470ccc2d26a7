// The blocklist library against others' code: JCS against the `canonicalize` package and RFC 8785's
// examples, signatures checked by node:crypto's Ed25519 over canonicalize's bytes, the RFC 8032 key
// vector, and the version arithmetic against plain Set arithmetic on generated lists.
import test from "ava";
import canonicalizeLibrary from "canonicalize";
import fc from "fast-check";
import { createHash, createPublicKey, verify } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { seededRandom } from "../../../test/support/seeded-random.js";
import {
  blocklistKeyId,
  CanonicalJsonError,
  canonicalJson,
  compileBlocklist,
  createBlocklistSigner,
  decodeSigningSeed,
  DomainError,
  diffSorted,
  generateSigningSeed,
  type JsonValue,
  listSha256,
  netChanges,
  normalizeDomain,
  planDelta,
  SigningKeyError,
  signDeltaAnswer,
  signFullAnswer,
  signVersionAnswer,
  sortDomains,
  verifyBlocklistAnswer,
} from "./index.js";

/** The `canonicalize` package's JCS text (it answers undefined only for undefined). */
function canonicalize(value: unknown): string {
  const text = canonicalizeLibrary(value);
  if (text === undefined) throw new TypeError("canonicalize wrote nothing");
  return text;
}

// --- domains ---

const accepted: [string, string][] = [
  ["example.com", "example.com"],
  ["EXAMPLE.Com.", "example.com"],
  ["Bücher.de", "xn--bcher-kva.de"],
  ["xn--bcher-kva.de", "xn--bcher-kva.de"],
  ["bücher.DE.", "xn--bcher-kva.de"],
  ["казино.рф", "xn--80aodfsg.xn--p1ai"],
  ["a-b.c-d.example", "a-b.c-d.example"],
  ["1xbet.com", "1xbet.com"],
  [`${"a".repeat(63)}.com`, `${"a".repeat(63)}.com`],
  ["ab--cd.example", "ab--cd.example"],
];

for (const [input, expected] of accepted) {
  test(`normalizeDomain(${JSON.stringify(input)}) is ${expected}`, (t) => {
    t.is(normalizeDomain(input), expected);
    t.is(normalizeDomain(expected), expected, "normalising twice changes nothing");
  });
}

const refused = [
  "",
  "com",
  "localhost.",
  "-casino.com",
  "casino-.com",
  "a..com",
  ".example.com",
  "example.com..",
  "casino_1.com",
  "exa mple.com",
  " example.com",
  "http://example.com",
  "example.com/path",
  "example.com:443",
  "user@example.com",
  "ex%41mple.com",
  `${"a".repeat(64)}.com`,
  `${"abcdefghi.".repeat(26)}com`,
  "xn--a.com",
  "1.2.3.4",
  "0x7f.1",
];

for (const input of refused) {
  test(`normalizeDomain refuses ${JSON.stringify(input.slice(0, 40))}`, (t) => {
    const err = t.throws(() => normalizeDomain(input, "domain"), { instanceOf: DomainError });
    t.is(err?.field, "domain");
    t.regex(err?.message ?? "", /^domain /);
  });
}

test("normalizeDomain names the field it is given", (t) => {
  t.throws(() => normalizeDomain("nope", "reports[3].domain"), { message: /^reports\[3\]\.domain must have at least two labels/ });
});

// --- JCS ---

test("RFC 8785 §3.2.2: the example with numbers, string escapes and literals", (t) => {
  const input = JSON.parse(
    '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
  );
  const expected =
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}';
  t.is(canonicalJson(input), expected);
  t.is(canonicalJson(input), canonicalize(input));
});

test("RFC 8785 §3.2.3: keys sorted by UTF-16 code units", (t) => {
  const input = JSON.parse(
    '{"\\u20ac": "Euro Sign", "\\r": "Carriage Return", "\\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\\ud83d\\ude00": "Emoji: Grinning Face", "\\u0080": "Control", "\\u00f6": "Latin Small Letter O With Diaeresis"}',
  );
  const text = canonicalJson(input);
  const keys = [...text.matchAll(/"((?:[^"\\]|\\.)*)":"/g)].map((m) => JSON.parse(`"${m[1]!}"`));
  t.deepEqual(keys, ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\ud83d\ude00", "\ufb33"]);
  t.true(text.startsWith('{"\\r":"Carriage Return","1":"One","\u0080":"Control"'));
  t.is(text, canonicalize(input));
});

// RFC 8785 Appendix B: IEEE 754 bit patterns and their JCS text.
const numberSamples: [string, string][] = [
  ["0000000000000000", "0"],
  ["8000000000000000", "0"],
  ["0000000000000001", "5e-324"],
  ["8000000000000001", "-5e-324"],
  ["7fefffffffffffff", "1.7976931348623157e+308"],
  ["ffefffffffffffff", "-1.7976931348623157e+308"],
  ["4340000000000000", "9007199254740992"],
  ["c340000000000000", "-9007199254740992"],
  ["4430000000000000", "295147905179352830000"],
  ["44b52d02c7e14af5", "9.999999999999997e+22"],
  ["44b52d02c7e14af6", "1e+23"],
  ["44b52d02c7e14af7", "1.0000000000000001e+23"],
  ["444b1ae4d6e2ef4e", "999999999999999700000"],
  ["444b1ae4d6e2ef4f", "999999999999999900000"],
  ["444b1ae4d6e2ef50", "1e+21"],
  ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
  ["3eb0c6f7a0b5ed8d", "0.000001"],
  ["41b3de4355555553", "333333333.3333332"],
  ["41b3de4355555554", "333333333.33333325"],
  ["41b3de4355555555", "333333333.3333333"],
  ["41b3de4355555556", "333333333.3333334"],
  ["41b3de4355555557", "333333333.33333343"],
  ["becbf647612f3696", "-0.0000033333333333333333"],
  ["43143ff3c1cb0959", "1424953923781206.2"],
];

test("RFC 8785 Appendix B: every number sample", (t) => {
  for (const [bits, expected] of numberSamples) {
    const value = Buffer.from(bits, "hex").readDoubleBE(0);
    t.is(canonicalJson(value), expected, bits);
    t.is(canonicalJson([value]), `[${expected}]`, bits);
  }
});

test("what JSON cannot hold is refused, naming where", (t) => {
  t.throws(() => canonicalJson({ a: [1, Number.NaN] }), { instanceOf: CanonicalJsonError, message: /^\$\.a\[1\] is NaN/ });
  t.throws(() => canonicalJson(Number.POSITIVE_INFINITY), { instanceOf: CanonicalJsonError });
  t.throws(() => canonicalJson({ s: "a\ud800b" }), { instanceOf: CanonicalJsonError, message: /lone surrogate/ });
  t.throws(() => canonicalJson(["\udc00"]), { instanceOf: CanonicalJsonError });
  t.throws(() => canonicalJson({ a: undefined } as unknown as JsonValue), {
    instanceOf: CanonicalJsonError,
    message: /^\$\.a is undefined/,
  });
  t.throws(() => canonicalJson({ d: new Date(0) } as unknown as JsonValue), {
    instanceOf: CanonicalJsonError,
    message: /plain JSON object/,
  });
  t.throws(() => canonicalJson(1n as unknown as JsonValue), { instanceOf: CanonicalJsonError });
});

test("every control character, quote and backslash is escaped as RFC 8785 says; the rest is written as is", (t) => {
  let all = "";
  for (let c = 0; c < 0x80; c++) all += String.fromCharCode(c);
  all += "\u2028\u2029\u00ff\ufeff😀";
  t.is(canonicalJson(all), canonicalize(all));
  t.is(canonicalJson("\u0007\u001f\b\t\n\f\r"), '"\\u0007\\u001f\\b\\t\\n\\f\\r"');
});

const jsonWithDoubles = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.string({ unit: "binary" }),
    fc.array(tie("value"), { maxLength: 6 }),
    fc.dictionary(fc.string({ unit: "binary", maxLength: 6 }), tie("value"), { maxKeys: 6 }),
  ),
}));

test("generated JSON: the same text as the canonicalize package, and it parses back to the same value (fast-check)", (t) => {
  fc.assert(
    fc.property(fc.oneof(fc.jsonValue() as fc.Arbitrary<JsonValue>, jsonWithDoubles.value), (value) => {
      const ours = canonicalJson(value);
      if (ours !== canonicalize(value)) return false;
      return isDeepStrictEqual(JSON.parse(ours), JSON.parse(JSON.stringify(value)));
    }),
    { numRuns: 3_000 },
  );
  t.pass();
});

// --- signing ---

// RFC 8032 §7.1, test 1: the seed and its public key.
const rfc8032Seed = Buffer.from("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", "hex");
const rfc8032Public = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

/** An agent's check with node:crypto's Ed25519 over canonicalize's bytes: no code of ours. */
function agentVerifies(answer: Record<string, unknown>, publicKeyBase64: string): boolean {
  const { signature, ...rest } = answer;
  const spki = Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), Buffer.from(publicKeyBase64, "base64")]);
  const key = createPublicKey({ key: spki, format: "der", type: "spki" });
  return verify(null, Buffer.from(canonicalize(rest), "utf8"), key, Buffer.from(signature as string, "base64"));
}

test("a signer from a seed: RFC 8032's public key, key_id from its SHA-256, the public-key answer", async (t) => {
  const signer = await createBlocklistSigner(rfc8032Seed);
  t.is(Buffer.from(signer.publicKey, "base64").toString("hex"), rfc8032Public);
  const keyId = createHash("sha256").update(Buffer.from(rfc8032Public, "hex")).digest("hex").slice(0, 16);
  t.is(signer.keyId, keyId);
  t.is(blocklistKeyId(Buffer.from(rfc8032Public, "hex")), keyId);
  t.regex(signer.keyId, /^[0-9a-f]{16}$/);
  t.deepEqual(signer.publicKeyAnswer, { key_id: keyId, algorithm: "Ed25519", public_key: signer.publicKey });
  const fromSetting = await createBlocklistSigner(rfc8032Seed.toString("base64"));
  t.is(fromSetting.publicKey, signer.publicKey);
});

test("signed answers verify with node:crypto over canonicalize's bytes, and a changed byte fails", async (t) => {
  const signer = await createBlocklistSigner(generateSigningSeed());
  const delta = signDeltaAnswer(signer, {
    from_version: 3,
    to_version: 5,
    added: ["casino.example", "xn--bcher-kva.de"],
    removed: [],
    entry_count: 2,
    list_sha256: listSha256(["casino.example", "xn--bcher-kva.de"]),
  });
  t.is(delta.key_id, signer.keyId);
  t.is(Buffer.from(delta.signature, "base64").length, 64);
  t.true(agentVerifies({ ...delta }, signer.publicKey));
  t.true(await verifyBlocklistAnswer({ ...delta }, signer.publicKey));
  // Key order does not matter: the agent rebuilds the bytes from the parsed JSON.
  const { signature, removed, ...rest } = delta;
  const reordered = JSON.parse(JSON.stringify({ signature, removed, ...rest }));
  t.true(agentVerifies(reordered, signer.publicKey));
  for (const tampered of [
    { ...delta, to_version: 6 },
    { ...delta, added: ["casino.example"] },
    { ...delta, removed: [""] },
    { ...delta, key_id: "0000000000000000" },
  ]) {
    t.false(agentVerifies(tampered, signer.publicKey));
    t.false(await verifyBlocklistAnswer(tampered, signer.publicKey));
  }
  const other = await createBlocklistSigner(generateSigningSeed());
  t.false(agentVerifies({ ...delta }, other.publicKey));
  t.false(await verifyBlocklistAnswer({ ...delta }, other.publicKey));
  t.false(await verifyBlocklistAnswer({ ...delta, signature: "AAAA" }, signer.publicKey));

  const version = signVersionAnswer(signer, {
    version: 5,
    entry_count: 2,
    updated_at: "2025-01-02T03:04:05.678Z",
    list_sha256: delta.list_sha256,
  });
  t.deepEqual(Object.keys(version).sort(), ["entry_count", "key_id", "list_sha256", "signature", "updated_at", "version"]);
  t.true(agentVerifies({ ...version }, signer.publicKey));
  const full = signFullAnswer(signer, {
    version: 5,
    entry_count: 2,
    list_sha256: delta.list_sha256,
    domains: ["casino.example", "xn--bcher-kva.de"],
  });
  t.true(agentVerifies({ ...full }, signer.publicKey));
  t.false(agentVerifies({ ...full, domains: ["casino.example"] }, signer.publicKey));
});

test("signing is deterministic for a seed, and refuses an answer that already holds a signature", async (t) => {
  const seed = generateSigningSeed();
  const [a, b] = await Promise.all([createBlocklistSigner(seed), createBlocklistSigner(Buffer.from(seed))]);
  const answer = { version: 1, domains: ["a.example"] };
  t.is(a.sign(answer), b.sign({ domains: ["a.example"], version: 1 }));
  t.not(a.sign(answer), a.sign({ ...answer, version: 2 }));
  t.throws(() => a.sign({ ...answer, signature: "x" }), { message: /without its signature/ });
});

test("a seed setting that is not base64 of 32 bytes is refused without echoing it", async (t) => {
  const secretish = Buffer.alloc(31, 7).toString("base64");
  for (const bad of ["", "not base64!", secretish, Buffer.alloc(33, 7).toString("base64"), `${Buffer.alloc(32, 9).toString("base64")}x`]) {
    const err = t.throws(() => decodeSigningSeed(bad), { instanceOf: SigningKeyError });
    t.regex(err?.message ?? "", /Protection:Blocklist:SigningKey must be base64 of a 32-byte Ed25519 seed/);
    if (bad !== "") t.false(err?.message.includes(bad));
    await t.throwsAsync(() => createBlocklistSigner(bad), { instanceOf: SigningKeyError });
  }
  await t.throwsAsync(() => createBlocklistSigner(new Uint8Array(16)), { instanceOf: SigningKeyError });
  const good = Buffer.alloc(32, 9);
  t.deepEqual(decodeSigningSeed(` ${good.toString("base64")}\n`), good);
  t.deepEqual(decodeSigningSeed(good.toString("base64").replace(/=$/, "")), good);
});

// --- versions and deltas ---

function randomDomains(random: () => number, count: number, pool: number): string[] {
  return Array.from({ length: count }, () => `d${Math.floor(random() * pool).toString(36)}.example`);
}

function setDiff(from: Iterable<string>, to: Iterable<string>) {
  const a = new Set(from);
  const b = new Set(to);
  return { added: [...b].filter((d) => !a.has(d)).sort(), removed: [...a].filter((d) => !b.has(d)).sort() };
}

test("listSha256 is SHA-256 of the domains each followed by a newline, across its hashing slices", (t) => {
  t.is(listSha256([]), createHash("sha256").update("").digest("hex"));
  t.is(listSha256(["a.example", "b.example"]), createHash("sha256").update("a.example\nb.example\n").digest("hex"));
  const many = sortDomains(randomDomains(seededRandom(1), 20_000, 1e9));
  t.is(
    listSha256(many),
    createHash("sha256")
      .update(many.map((d) => `${d}\n`).join(""))
      .digest("hex"),
  );
});

test("sortDomains sorts by code units and drops repeats; a sorted list comes back as is", (t) => {
  t.deepEqual(sortDomains(["b.example", "a-b.example", "a.example", "b.example", "a0.example"]), [
    "a-b.example",
    "a.example",
    "a0.example",
    "b.example",
  ]);
  const sorted = ["a.example", "b.example"];
  t.is(sortDomains(sorted), sorted);
  t.deepEqual(sortDomains(new Set(["z.example", "y.example"])), ["y.example", "z.example"]);
});

test("diffSorted agrees with Set arithmetic on generated lists", (t) => {
  const random = seededRandom(7);
  for (let round = 0; round < 200; round++) {
    const pool = 1 + Math.floor(random() * 200);
    const from = sortDomains(randomDomains(random, Math.floor(random() * 150), pool));
    const to = sortDomains(randomDomains(random, Math.floor(random() * 150), pool));
    t.deepEqual(diffSorted(from, to), setDiff(from, to));
  }
});

test("compileBlocklist: a version per change, none when nothing changed, the hash and count of the new list", (t) => {
  const first = compileBlocklist(undefined, ["b.example", "a.example", "b.example"]);
  t.like(first, { changed: true, version: 1, added: ["a.example", "b.example"], removed: [], entry_count: 2 });
  t.deepEqual(first.domains, ["a.example", "b.example"]);
  t.is(first.list_sha256, listSha256(["a.example", "b.example"]));
  const same = compileBlocklist(first, ["a.example", "b.example"]);
  t.like(same, { changed: false, version: 1, added: [], removed: [], entry_count: 2, list_sha256: first.list_sha256 });
  const second = compileBlocklist(first, ["c.example", "a.example"]);
  t.like(second, { changed: true, version: 2, added: ["c.example"], removed: ["b.example"], entry_count: 2 });
  t.not(second.list_sha256, first.list_sha256);
  t.like(compileBlocklist(undefined, []), { changed: false, version: 0, entry_count: 0, list_sha256: listSha256([]) });
  t.throws(() => compileBlocklist({ version: 1, domains: ["b.example", "a.example"] }, []), { instanceOf: RangeError });
});

test("netChanges over a chain of versions equals the diff between its ends, sorted and disjoint", (t) => {
  const random = seededRandom(11);
  for (let round = 0; round < 50; round++) {
    const versions: (readonly string[])[] = [[]];
    const steps = [];
    const pool = 5 + Math.floor(random() * 60);
    for (let v = 1; v <= 1 + Math.floor(random() * 12); v++) {
      const compiled = compileBlocklist(
        { version: v - 1, domains: versions[v - 1]! },
        randomDomains(random, Math.floor(random() * 40), pool),
      );
      versions.push(compiled.domains);
      steps.push(compiled);
    }
    const current = versions.length - 1;
    for (let from = 0; from <= current; from++) {
      const net = netChanges(steps.slice(from));
      t.deepEqual(net, setDiff(versions[from]!, versions[current]!), `round ${round}, from ${from}`);
      t.false(net.added.some((d) => net.removed.includes(d)));
    }
  }
});

test("planDelta: the same version is empty; ahead or beyond the retained versions needs a full sync", (t) => {
  t.deepEqual(planDelta(7, 7, 100), { kind: "empty" });
  t.deepEqual(planDelta(0, 0, 100), { kind: "empty" });
  t.deepEqual(planDelta(8, 7, 100), { kind: "full_sync_required" });
  t.deepEqual(planDelta(0, 7, 100), { kind: "delta" });
  t.deepEqual(planDelta(0, 100, 100), { kind: "delta" });
  t.deepEqual(planDelta(0, 101, 100), { kind: "full_sync_required" });
  t.deepEqual(planDelta(5, 105, 100), { kind: "delta" });
  t.deepEqual(planDelta(4, 105, 100), { kind: "full_sync_required" });
  t.throws(() => planDelta(-1, 3, 100), { instanceOf: RangeError });
  t.throws(() => planDelta(1.5, 3, 100), { instanceOf: RangeError });
});
