// The generic meshwork.api.v1.HttpErrorStatus error detail: a 4xx status in place of the code's
// standard one (402 for a declined payment), never for a server error; and a 5xx keeps the
// service's ErrorInfo reason as its code but never its message.
import test from "ava";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { HttpErrorStatusSchema } from "../../gen/meshwork/api/v1/options_pb.js";
import { fromConnectError } from "./from-connect-error.js";

const info = (reason: string) => ({ desc: ErrorInfoSchema, value: { reason, domain: "test" } });

test("a 4xx HttpErrorStatus detail sets the status; the reason and message stay", (t) => {
  const err = new ConnectError("declined", Code.FailedPrecondition, undefined, [
    info("PAYMENT_FAILED"),
    { desc: HttpErrorStatusSchema, value: { status: 402 } },
  ]);
  const out = fromConnectError(err);
  t.is(out.status, 402);
  t.is(out.errorName, "PAYMENT_FAILED");
  t.is(out.detail, "declined");
});

test("a status outside 4xx, or on a server error, is ignored", (t) => {
  const to500 = new ConnectError("x", Code.InvalidArgument, undefined, [{ desc: HttpErrorStatusSchema, value: { status: 500 } }]);
  t.is(fromConnectError(to500).status, 400);
  const unavailable = new ConnectError("processor at 10.0.0.5 down", Code.Unavailable, undefined, [
    info("PAYMENT_PROCESSOR_UNAVAILABLE"),
    { desc: HttpErrorStatusSchema, value: { status: 402 } },
  ]);
  const out = fromConnectError(unavailable);
  t.is(out.status, 503);
  t.is(out.errorName, "PAYMENT_PROCESSOR_UNAVAILABLE");
  t.false(out.detail.includes("10.0.0.5"));
});

test("a 502 HttpErrorStatus detail on a server error answers 502 with the generic text, never the message", (t) => {
  const err = new ConnectError("telegram at https://api.telegram.org/bot123:SECRET refused", Code.Unavailable, undefined, [
    info("CHANNEL_PLATFORM_REFUSED"),
    { desc: HttpErrorStatusSchema, value: { status: 502 } },
  ]);
  const out = fromConnectError(err);
  t.is(out.status, 502);
  t.is(out.errorName, "CHANNEL_PLATFORM_REFUSED");
  t.false(out.detail.includes("SECRET"));
  const onClientError = new ConnectError("x", Code.InvalidArgument, undefined, [{ desc: HttpErrorStatusSchema, value: { status: 502 } }]);
  t.is(fromConnectError(onClientError).status, 400);
});
