import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import test from "ava";
import { BadRequestSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { CreateAssetRequestSchema } from "../../../gen/tracking/v1/asset_pb.js";
import { CreateObservationRequestSchema, ObservationInputSchema } from "../../../gen/tracking/v1/observation_pb.js";
import { missingRequiredFields, resolvePage } from "./index.js";

test("REQUIRED fields from the contract are reported by proto path, nested ones included", (t) => {
  const empty = create(CreateObservationRequestSchema, { observation: {} });
  t.deepEqual(
    missingRequiredFields(CreateObservationRequestSchema, empty).map((v) => v.field),
    ["observation.observed_at", "observation.latitude", "observation.longitude"],
  );
  const zeroes = create(CreateObservationRequestSchema, { observation: { observedAt: timestampNow(), latitude: 0, longitude: 0 } });
  t.deepEqual(missingRequiredFields(CreateObservationRequestSchema, zeroes), [], "an explicit 0 is present");
  t.deepEqual(missingRequiredFields(ObservationInputSchema, create(ObservationInputSchema, { latitude: 1 })).length, 2);
});

test("a message with nothing required passes untouched; an absent parent is not descended into", (t) => {
  t.deepEqual(missingRequiredFields(CreateAssetRequestSchema, create(CreateAssetRequestSchema)), []);
  t.deepEqual(missingRequiredFields(CreateObservationRequestSchema, create(CreateObservationRequestSchema)), []);
});

test("paging: defaults, bounds and errors naming the parameter", (t) => {
  t.deepEqual(resolvePage({}), { page: 1, pageSize: 50, offset: 0 });
  t.deepEqual(resolvePage({ page: 3, pageSize: 200 }), { page: 3, pageSize: 200, offset: 400 });
  for (const [input, field] of [
    [{ page: 0 }, "page"],
    [{ pageSize: 0 }, "page_size"],
    [{ pageSize: 201 }, "page_size"],
  ] as const) {
    const err = t.throws(() => resolvePage(input), { instanceOf: ConnectError }) as ConnectError;
    t.is(err.code, Code.InvalidArgument);
    t.deepEqual(
      err.findDetails(BadRequestSchema)[0]!.fieldViolations.map((v) => v.field),
      [field],
    );
  }
});
