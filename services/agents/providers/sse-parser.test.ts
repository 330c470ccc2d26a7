// The SSE parser against streams cut at every byte, CRLF and CR line ends, comments, multi-line data
// and a UTF-8 character split between reads.
import test from "ava";
import { SseParser } from "./sse-parser.js";

const stream = ': hello\r\ndata: {"a":1}\r\n\r\nevent: x\ndata: line one\ndata:line two\nid: 7\n\ndata: é€😀\r\rdata: [DONE]\n\n';
const expected = [
  { event: "message", data: '{"a":1}', id: undefined },
  { event: "x", data: "line one\nline two", id: "7" },
  { event: "message", data: "é€😀", id: "7" },
  { event: "message", data: "[DONE]", id: "7" },
];

test("whole stream: comments dropped, fields read, events dispatched on blank lines", (t) => {
  const parser = new SseParser();
  t.deepEqual([...parser.push(Buffer.from(stream)), ...parser.end()], expected);
});

test("the same events whatever two reads the bytes are split into", (t) => {
  const bytes = Buffer.from(stream);
  for (let cut = 0; cut <= bytes.length; cut++) {
    const parser = new SseParser();
    const events = [...parser.push(bytes.subarray(0, cut)), ...parser.push(bytes.subarray(cut)), ...parser.end()];
    t.deepEqual(events, expected, `cut at byte ${cut}`);
  }
});

test("one byte per read", (t) => {
  const parser = new SseParser();
  const events = [];
  for (const byte of Buffer.from(stream)) events.push(...parser.push(Uint8Array.of(byte)));
  events.push(...parser.end());
  t.deepEqual(events, expected);
});

test("an event without its closing blank line is not dispatched", (t) => {
  const parser = new SseParser();
  t.deepEqual([...parser.push(Buffer.from("data: partial")), ...parser.end()], []);
});
