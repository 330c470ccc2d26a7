// The gRPC wire pieces both ends share: grpc-timeout, grpc-message, the status trailers, framing.
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import test from "ava";
import { BadRequestSchema } from "../../../gen/google/rpc/error_details_pb.js";
import {
  decodeGrpcMessage,
  encodeGrpcMessage,
  errorFromTrailers,
  errorTrailers,
  FrameReader,
  frame,
  grpcTimeoutHeader,
  parseGrpcTimeout,
} from "./grpc-wire.js";

test("grpc-timeout: every unit, a deadline past a timer's reach is none, a malformed one is refused", (t) => {
  t.is(parseGrpcTimeout(undefined), undefined);
  t.is(parseGrpcTimeout("1H"), 3_600_000);
  t.is(parseGrpcTimeout("2M"), 120_000);
  t.is(parseGrpcTimeout("3S"), 3_000);
  t.is(parseGrpcTimeout("250m"), 250);
  t.is(parseGrpcTimeout("2500u"), 2.5);
  t.is(parseGrpcTimeout("1n"), 1, "a deadline already due is one millisecond away, not none");
  t.is(parseGrpcTimeout("0m"), 1);
  t.is(parseGrpcTimeout("99999999S"), undefined, "about three years: no timer can wait that long");
  t.true(parseGrpcTimeout("2147483647m") instanceof ConnectError, "more than eight digits is malformed");
  for (const bad of ["", "10", "10x", "-1S", "123456789S", "1.5S", " 1S"]) {
    const parsed = parseGrpcTimeout(bad);
    t.true(parsed instanceof ConnectError, bad);
    t.is((parsed as ConnectError).code, Code.InvalidArgument, bad);
  }
});

test("grpc-timeout written for a deadline: whole milliseconds, seconds when they do not fit", (t) => {
  t.is(grpcTimeoutHeader(1500), "1500m");
  t.is(grpcTimeoutHeader(0.2), "1m");
  t.is(grpcTimeoutHeader(99_999_999), "99999999m");
  t.is(grpcTimeoutHeader(100_000_000), "100000S");
  for (const ms of [1, 20, 1500, 99_999_999, 100_000_000, 2 ** 31]) {
    const back = parseGrpcTimeout(grpcTimeoutHeader(ms));
    t.true(back === undefined || (typeof back === "number" && back >= ms), String(ms));
  }
});

test("grpc-message: percent-encoded only outside printable ASCII and for %, and read back as written", (t) => {
  const text = "device_id: 'nope' is not a valid uuid; asset_id: 'wägen:7' (100%)\nnext";
  const encoded = encodeGrpcMessage(text);
  t.is(encoded, "device_id: 'nope' is not a valid uuid; asset_id: 'w%C3%A4gen:7' (100%25)%0Anext");
  t.is(decodeGrpcMessage(encoded), text);
  // What grpc-js does with it (decodeURI) gives the same text.
  t.is(decodeURI(encoded), text);
  t.is(encodeGrpcMessage("plain"), "plain");
  t.is(decodeGrpcMessage("broken %E0%A4%A"), "broken %E0%A4%A", "an undecodable value is kept as it came");
});

test("an error's trailers carry code, message, details and metadata, and read back into the same error", (t) => {
  const violation = create(BadRequestSchema, { fieldViolations: [{ field: "device_id", description: "must be a uuid" }] });
  const error = new ConnectError("device_id: must be a uuid", Code.InvalidArgument, { "x-request-id": "r-1", "content-type": "x" }, [
    { desc: BadRequestSchema, value: violation },
  ]);
  const trailers = errorTrailers(error);
  t.is(trailers["grpc-status"], "3");
  t.is(trailers["grpc-message"], "device_id: must be a uuid");
  t.is(trailers["x-request-id"], "r-1");
  t.false("content-type" in trailers, "protocol headers in metadata do not override the protocol");
  t.regex(trailers["grpc-status-details-bin"]!, /^[A-Za-z0-9+/]+$/, "unpadded base64");

  const back = errorFromTrailers(new Headers(trailers), 200)!;
  t.is(back.code, Code.InvalidArgument);
  t.is(back.rawMessage, "device_id: must be a uuid");
  t.is(back.metadata.get("x-request-id"), "r-1");
  t.false(back.metadata.has("grpc-status"));
  t.is(back.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field, "device_id");
});

test("trailers: OK is no error; a missing status is, by HTTP status when not 200", (t) => {
  t.is(errorFromTrailers(new Headers({ "grpc-status": "0" }), 200), undefined);
  t.is(errorFromTrailers(new Headers(), 200)?.code, Code.Internal);
  t.is(errorFromTrailers(new Headers(), 503)?.code, Code.Unavailable);
  t.is(errorFromTrailers(new Headers(), 404)?.code, Code.Unimplemented);
  t.is(errorFromTrailers(new Headers({ "grpc-status": "99" }), 200)?.code, Code.Unknown);
});

test("frames: split across chunks, several in one chunk, and a message over the limit refused from its header", (t) => {
  const a = toBinary(BadRequestSchema, create(BadRequestSchema, { fieldViolations: [{ field: "a" }] }));
  const b = new Uint8Array(300).fill(7);
  const bytes = Buffer.concat([frame(a), frame(b), frame(new Uint8Array())]);
  for (const size of [1, 2, 5, 7, 64, bytes.length]) {
    const reader = new FrameReader(1024);
    const out: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; i += size) out.push(...reader.push(bytes.subarray(i, i + size)));
    t.deepEqual(
      out.map((m) => Buffer.from(m).toString("hex")),
      [a, b, new Uint8Array()].map((m) => Buffer.from(m).toString("hex")),
      `chunks of ${size}`,
    );
    t.false(reader.partial);
  }
  const small = new FrameReader(100);
  const error = t.throws(() => small.push(frame(b).subarray(0, 5)), { instanceOf: ConnectError }) as ConnectError;
  t.is(error.code, Code.ResourceExhausted);
  const compressed = Buffer.from(frame(a));
  compressed[0] = 1;
  t.is((t.throws(() => new FrameReader(100).push(compressed)) as ConnectError).code, Code.Internal);
  const partial = new FrameReader(1024);
  partial.push(frame(b).subarray(0, 20));
  t.true(partial.partial);
});
