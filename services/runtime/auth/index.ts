// Auth primitives every service stands on: API keys held as digests, the contract's auth policy
// per rpc, the one interceptor that enforces it, the caller's identity, and the open-API guard.
export { createApiKeyStore, type ApiKeyIdentity, type ApiKeyStore } from "./api-key-store.js";
export {
  API_KEY_HEADER,
  authInterceptor,
  rejectedCredentialError,
  type AuthInterceptorOptions,
  type BearerVerifier,
  type CredentialSchemes,
} from "./auth-interceptor.js";
export {
  anonymous,
  callerKey,
  currentCaller,
  currentIdentity,
  type CallerContext,
  type Identity,
} from "./identity.js";
export { isLoopbackHost } from "./loopback.js";
export { assertOpenApiBindAllowed, type GuardedApi, type Listener, type OpenApiGuardOptions, openApiWarning } from "./open-api-guard.js";
export { policyOf, type PolicyKind, type ResolvedPolicy } from "./policy.js";
export { roleSatisfies, type RoleRanking } from "./roles.js";
