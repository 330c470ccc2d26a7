// tracking.v1.AuthService handlers: who the caller is, as the auth interceptor resolved it.
import type { ServiceImpl } from "@connectrpc/connect";
import type { AuthService } from "../../gen/tracking/v1/auth_pb.js";
import { currentCaller, rejectedCredentialError } from "../runtime/auth/index.js";

export function authService(): ServiceImpl<typeof AuthService> {
  return {
    getMe() {
      const { identity, rejectedCredential } = currentCaller();
      // Open to anonymous callers, but a client checking its key must learn that it is wrong.
      if (rejectedCredential) throw rejectedCredentialError(rejectedCredential);
      return { authenticated: identity.authenticated, name: identity.name, role: identity.role };
    },
  };
}
