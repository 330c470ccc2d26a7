// The encoding and crypto tools, run directly (no dispatcher): each answer checked against Node's
// own primitives or a known vector, and every error case.
import { createHash } from "node:crypto";
import test from "ava";
import { testToolContext, toolNamed } from "../testing.js";
import { ToolError } from "../tool.js";
import { encodingTools } from "./index.js";

const run = async (name: string, args: Record<string, unknown>) => toolNamed(encodingTools, name).run(args, await testToolContext());

test("encode_base64 answers standard base64, and URL-safe without padding when asked", async (t) => {
  t.is(await run("encode_base64", { text: "hi?>" }), "aGk/Pg==");
  t.is(await run("encode_base64", { text: "hi?>", urlSafe: true }), "aGk_Pg");
  t.is(await run("encode_base64", { text: "héllo", urlSafe: false }), Buffer.from("héllo").toString("base64"));
});

test("decode_base64 accepts standard and URL-safe, padded or not, and refuses what is not base64", async (t) => {
  t.is(await run("decode_base64", { encoded: "aGk/Pg==" }), "hi?>");
  t.is(await run("decode_base64", { encoded: "aGk_Pg" }), "hi?>");
  t.is(await run("decode_base64", { encoded: Buffer.from("héllo wörld").toString("base64url") }), "héllo wörld");
  await t.throwsAsync(run("decode_base64", { encoded: "not base64!" }), { instanceOf: ToolError, message: /not base64/ });
  await t.throwsAsync(run("decode_base64", { encoded: "abcde" }), { instanceOf: ToolError });
  t.regex(String(await run("decode_base64", { encoded: "/w==" })), /not UTF-8 text: 1 bytes, hex ff/);
});

test("encode_url escapes like encodeURIComponent and decode_url reverses it", async (t) => {
  const text = "a b&c=d/é?#~'()*!";
  const encoded = await run("encode_url", { text });
  t.is(encoded, encodeURIComponent(text));
  t.is(encoded, "a%20b%26c%3Dd%2F%C3%A9%3F%23~'()*!");
  t.is(await run("decode_url", { encoded }), text);
  await t.throwsAsync(run("decode_url", { encoded: "%E0%A4%A" }), { instanceOf: ToolError, message: /percent-encoding/ });
});

test("decode_jwt answers header, payload, claims and signatureVerified false; a bad token is an Error", async (t) => {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const payload = { sub: "user-1", iss: "https://issuer.test", aud: ["a", "b"], exp: 4_102_444_800, iat: 1_700_000_000, role: "x" };
  const token = `${part({ alg: "HS256", typ: "JWT" })}.${part(payload)}.c2lnbmF0dXJl`;
  const decoded = (await run("decode_jwt", { token })) as Record<string, unknown>;
  t.deepEqual(decoded, {
    header: { alg: "HS256", typ: "JWT" },
    payload,
    claims: {
      sub: "user-1",
      iss: "https://issuer.test",
      aud: ["a", "b"],
      exp: "2100-01-01T00:00:00.000Z",
      iat: new Date(1_700_000_000_000).toISOString(),
      expired: false,
    },
    signatureVerified: false,
  });
  await t.throwsAsync(run("decode_jwt", { token: "only.two" }), { instanceOf: ToolError, message: /not a JWT/ });
  await t.throwsAsync(run("decode_jwt", { token: `${part({ alg: "none" })}.bm90IGpzb24.x` }), {
    instanceOf: ToolError,
    message: /payload is not base64url-encoded JSON/,
  });
});

test("hash_compute answers lowercase hex for every algorithm, sha256 by default, and refuses another", async (t) => {
  t.is(await run("hash_compute", { text: "abc" }), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  for (const algorithm of ["sha512", "sha384", "sha1", "md5"]) {
    t.is(await run("hash_compute", { text: "abc", algorithm }), createHash(algorithm).update("abc").digest("hex"));
  }
  t.is(await run("hash_compute", { text: "abc", algorithm: "MD5" }), "900150983cd24fb0d6963f7d28e17f72");
  await t.throwsAsync(run("hash_compute", { text: "abc", algorithm: "crc32" }), {
    instanceOf: ToolError,
    message: "algorithm must be one of sha256, sha512, sha384, sha1, md5",
  });
});

test("generate_guid answers v4 UUIDs one per line, count clamped to 1–20", async (t) => {
  const v4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const lines = (value: unknown) => String(value).split("\n");
  t.is(lines(await run("generate_guid", {})).length, 1);
  const five = lines(await run("generate_guid", { count: 5 }));
  t.is(five.length, 5);
  t.is(new Set(five).size, 5);
  for (const id of five) t.regex(id, v4);
  t.is(lines(await run("generate_guid", { count: 50 })).length, 20);
  t.is(lines(await run("generate_guid", { count: 0 })).length, 1);
  t.is(lines(await run("generate_guid", { count: -3 })).length, 1);
});
