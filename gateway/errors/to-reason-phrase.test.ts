// The REASON_PHRASE style writes the status's phrase whatever the service named its error.
import { Code, ConnectError } from "@connectrpc/connect";
import test from "ava";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { fromConnectError } from "./from-connect-error.js";
import { HttpError } from "./http-error.js";
import { renderError } from "./render-error.js";

test("error is the reason phrase, message the detail", (t) => {
  const cases: [HttpError, string][] = [
    [new HttpError(401, "unauthenticated", "missing API key"), "Unauthorized"],
    [new HttpError(403, "permission_denied", "needs admin"), "Forbidden"],
    [new HttpError(404, "not_found", "No operation matches this path."), "Not Found"],
    [new HttpError(409, "aborted", "a turn is running"), "Conflict"],
    [new HttpError(415, "unsupported_media_type", "json only"), "Unsupported Media Type"],
    [new HttpError(429, "resource_exhausted", "slow down"), "Too Many Requests"],
  ];
  for (const [error, phrase] of cases) {
    const rendered = renderError(error, "reason-phrase");
    t.is(rendered.contentType, "application/json");
    t.deepEqual(rendered.document, { error: phrase, message: error.detail });
  }
  const named = new ConnectError("agent busy", Code.Aborted, undefined, [{ desc: ErrorInfoSchema, value: { reason: "AGENT_BUSY" } }]);
  t.deepEqual(renderError(fromConnectError(named), "reason-phrase").document, { error: "Conflict", message: "agent busy" });
  t.deepEqual(
    renderError(fromConnectError(named), "error-message").document,
    { error: "AGENT_BUSY", message: "agent busy" },
    "ERROR_MESSAGE is unchanged",
  );
});
