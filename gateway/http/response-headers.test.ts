// The allow rule for service response headers, as a table: what reaches a REST client.
import test from "ava";
import { clientResponseHeaders, forwardsResponseHeader } from "./response-headers.js";

const cases: [name: string, forwarded: boolean][] = [
  ["content-disposition", true],
  ["Content-Disposition", true],
  ["cache-control", true],
  ["retry-after", true],
  ["location", true],
  ["x-export-truncated", true],
  ["X-Export-Total-Count", true],
  ["x-ratelimit-remaining", true],
  // The gateway's own, and protocol hops.
  ["x-request-id", false],
  // The mesh's own, between gateway and service (the caller's key name for the front's log).
  ["x-meshwork-caller", false],
  ["X-Request-Id", false],
  ["x-grpc-web", false],
  ["x-user-agent", false],
  ["grpc-status", false],
  ["grpc-message", false],
  ["grpc-encoding", false],
  ["grpc-accept-encoding", false],
  ["connect-content-encoding", false],
  ["connect-accept-encoding", false],
  ["content-type", false],
  ["content-length", false],
  ["content-encoding", false],
  ["te", false],
  ["trailer", false],
  ["trailer-grpc-status", false],
  ["transfer-encoding", false],
  ["connection", false],
  ["set-cookie", false],
  ["accept-encoding", false],
  ["xy", false],
];

for (const [name, forwarded] of cases) {
  test(`${name} is ${forwarded ? "" : "not "}forwarded`, (t) => {
    t.is(forwardsResponseHeader(name), forwarded);
  });
}

test("clientResponseHeaders keeps only the forwardable headers, and nothing is undefined", (t) => {
  const h = new Headers({
    "content-type": "application/grpc",
    "grpc-encoding": "identity",
    "content-disposition": "attachment",
    "x-export-truncated": "true",
  });
  t.deepEqual(clientResponseHeaders(h), { "content-disposition": "attachment", "x-export-truncated": "true" });
  t.is(clientResponseHeaders(new Headers({ "grpc-status": "0" })), undefined);
  t.is(clientResponseHeaders(undefined), undefined);
});
