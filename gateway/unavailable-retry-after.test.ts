// Every 503 tells the client when to come back: the service's Retry-After when it set one, the
// front's default otherwise (an unreachable service sets nothing).
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import test from "ava";
import { LibraryService } from "../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { createFront } from "./index.js";
import { captureLogger } from "../test/support/gateway-harness.js";

const transport = createRouterTransport(({ service }) => {
  service(LibraryService, {
    getBook(req) {
      if (req.name === "own") throw new ConnectError("busy", Code.Unavailable, { "retry-after": "17" });
      if (req.name === "down") throw new ConnectError("no route to the service", Code.Unavailable);
      throw new ConnectError("boom", Code.Internal);
    },
  });
});

async function start(t: import("ava").ExecutionContext) {
  const front = createFront({
    name: "lib",
    host: "127.0.0.1",
    port: 0,
    services: [LibraryService],
    transport,
    logger: captureLogger([]),
    unavailableRetryAfterSeconds: 3,
  });
  const { port } = await front.listen();
  t.teardown(() => front.close());
  return `http://127.0.0.1:${port}`;
}

test("a 503 without a service Retry-After gets the front's; the service's own wins; a 500 gets none", async (t) => {
  const base = await start(t);
  const down = await fetch(`${base}/v1/books/down`);
  t.is(down.status, 503);
  t.is(down.headers.get("retry-after"), "3");
  const own = await fetch(`${base}/v1/books/own`);
  t.is(own.status, 503);
  t.is(own.headers.get("retry-after"), "17");
  const bug = await fetch(`${base}/v1/books/bug`);
  t.is(bug.status, 500);
  t.is(bug.headers.get("retry-after"), null);
});
