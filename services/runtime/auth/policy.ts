// The auth policy of an rpc, as its contract declares it: the method's (meshwork.api.v1.auth),
// else the service's (meshwork.api.v1.default_auth), else none. Read once per method.
import { getOption, hasOption, type DescMethod } from "@bufbuild/protobuf";
import { AuthKind, auth, default_auth, type AuthPolicy } from "../../../gen/meshwork/api/v1/options_pb.js";

export type PolicyKind = "none" | "api-key" | "bearer";

export interface ResolvedPolicy {
  readonly kind: PolicyKind;
  /** The least role the credential must carry; "" for any valid credential. */
  readonly role: string;
}

const NONE: ResolvedPolicy = Object.freeze({ kind: "none", role: "" });

const cache = new WeakMap<DescMethod, ResolvedPolicy>();

function declared(policy: AuthPolicy | undefined): ResolvedPolicy | undefined {
  switch (policy?.kind) {
    case AuthKind.NONE:
      return NONE;
    case AuthKind.API_KEY:
      return { kind: "api-key", role: policy.role };
    case AuthKind.BEARER:
      return { kind: "bearer", role: policy.role };
    default:
      // Unset or UNSPECIFIED: the next level decides (options.proto).
      return undefined;
  }
}

/** The policy that applies to a method, cached per method descriptor. */
export function policyOf(method: DescMethod): ResolvedPolicy {
  let policy = cache.get(method);
  if (policy === undefined) {
    policy =
      declared(hasOption(method, auth) ? getOption(method, auth) : undefined) ??
      declared(hasOption(method.parent, default_auth) ? getOption(method.parent, default_auth) : undefined) ??
      NONE;
    cache.set(method, Object.freeze(policy));
  }
  return policy;
}
