// protection.v1.PkiService handlers: the device CA's certificate and its CRL, for anyone.
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { HttpBodySchema } from "../../gen/google/api/httpbody_pb.js";
import type { PkiService } from "../../gen/protection/v1/pki_pb.js";
import type { DevicesDeps } from "./devices/deps.js";

export function pkiService(deps: Pick<DevicesDeps, "authority" | "db">): ServiceImpl<typeof PkiService> {
  const caPem = new TextEncoder().encode(deps.authority.ca.certPem);
  return {
    getCaCertificate() {
      return create(HttpBodySchema, { contentType: "application/x-pem-file", data: caPem });
    },

    async getCrl(_req, ctx) {
      // Made from the stored revocations on each request: a revocation shows at once.
      ctx.responseHeader.set("cache-control", "no-cache");
      return create(HttpBodySchema, { contentType: "application/pkix-crl", data: await deps.authority.crl(deps.db.em()) });
    },
  };
}
