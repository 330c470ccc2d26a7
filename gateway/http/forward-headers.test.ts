// Which headers a gateway passes to a service: never the client's own address claims, and no
// client address at all for a method whose (meshwork.api.v1.client_address) is DROP.
import test from "ava";
import type { IncomingMessage } from "node:http";
import { forwardableHeader, serviceHeaders } from "./forward-headers.js";

const request = (headers: Record<string, string>) =>
  ({ headers, socket: { remoteAddress: "::ffff:203.0.113.5" } }) as unknown as IncomingMessage;

const claims = { "x-forwarded-for": "198.51.100.1", "x-real-ip": "198.51.100.2", forwarded: "for=198.51.100.3", traceparent: "00-a-b-01" };

test("by default the TCP address is passed; the client's address headers are not", (t) => {
  const out = serviceHeaders(request(claims), "rid", undefined);
  t.deepEqual(out, { "x-request-id": "rid", "x-meshwork-client-address": "203.0.113.5", traceparent: "00-a-b-01" });
});

test("client_address DROP: no address, not even one a front's forwarder adds", (t) => {
  const out = serviceHeaders(
    request(claims),
    "rid",
    (_req, o) => {
      o["x-meshwork-client-address"] = "203.0.113.5";
    },
    { dropClientAddress: true },
  );
  t.deepEqual(out, { "x-request-id": "rid", traceparent: "00-a-b-01" });
});

test("forward_headers: the named headers pass as sent; address claims and mesh headers cannot be named", (t) => {
  const out = serviceHeaders(request({ ...claims, "stripe-signature": "t=1,v1=ab" }), "rid", undefined, {
    dropClientAddress: false,
    forwardHeaders: ["stripe-signature", "x-missing"],
  });
  t.is(out["stripe-signature"], "t=1,v1=ab");
  t.false("x-missing" in out);
  t.false("x-forwarded-for" in out);
  for (const name of ["x-forwarded-for", "x-real-ip", "forwarded", "x-meshwork-client-address", "Stripe-Signature", "host"]) {
    t.false(forwardableHeader(name), name);
  }
  t.true(forwardableHeader("stripe-signature"));
});
