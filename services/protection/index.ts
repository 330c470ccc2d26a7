// Device protection (interface: shared/spec/protection-api.md), as a module the mesh can host: its
// front listens on :8081 with snake_case JSON and `{ error, message }` errors. Today it serves
// health, accounts and EdDSA access tokens with rotating refresh tokens, with rate limits and a
// login lockout kept in PostgreSQL.
import { AccountService } from "../../gen/protection/v1/account_pb.js";
import { AuthService } from "../../gen/protection/v1/auth_pb.js";
import { HealthService } from "../../gen/protection/v1/health_pb.js";
import { ErrorStyle, JsonNaming } from "../../gen/meshwork/api/v1/options_pb.js";
import { defineService } from "../runtime/host/index.js";
import { defineModule, type ModuleDeps } from "../runtime/module/index.js";
import { createUnitOfWork } from "../runtime/outbox/index.js";
import { createRateLimiter, rateLimitTable } from "../runtime/rate-limit/index.js";
import { accountService } from "./account-service.js";
import { authService } from "./auth-service.js";
import type { ProtectionDeps } from "./deps.js";
import { protectionStream } from "./events/subjects.js";
import { healthService } from "./health-service.js";
import { createPasswordHasher } from "./passwords/password-hasher.js";
import { applyConfiguredRoles, setRoleCommand } from "./roles.js";
import { type ProtectionSettings, protectionSettings } from "./settings.js";
import { AccountEntity, LoginLockEntity, RefreshTokenEntity, RevokedFamilyEntity, SigningKeyEntity } from "./store/entities.js";
import { ProtectionIdentity0001 } from "./store/migrations/0001-identity.js";
import { loadSigningKey } from "./tokens/signing-key.js";
import { createTokenService, type TokenService } from "./tokens/token-service.js";

export { protectionStream, subjects } from "./events/subjects.js";

const rateLimits = rateLimitTable("protection_rate_limit");

/**
 * The bearer verifier exists before the module starts (the auth interceptor is built first); it
 * answers through the token service once start() has made it.
 */
function lateVerifier() {
  let tokens: TokenService | undefined;
  return {
    bind(service: TokenService) {
      tokens = service;
    },
    verifier: {
      roles: ["user", "authority", "admin"] as const,
      reasons: { missing: "UNAUTHORIZED", invalid: "INVALID_TOKEN" },
      verify: (token: string, call: Parameters<TokenService["verifier"]["verify"]>[1]) => tokens?.verifier.verify(token, call),
    },
  };
}

// One per mesh (two meshes may share a process in tests): keyed by the settings both calls get.
const verifiers = new WeakMap<object, ReturnType<typeof lateVerifier>>();
const verifierFor = (settings: object) => {
  let found = verifiers.get(settings);
  if (!found) verifiers.set(settings, (found = lateVerifier()));
  return found;
};

export const protectionModule = defineModule({
  name: "protection",
  title: "device protection",
  settings: protectionSettings,
  renamedSettings: { "Gateway:Protection:Port": "Fronts:Protection:Port" },
  services: [HealthService, AuthService, AccountService],
  database: {
    name: "protection",
    entities: [AccountEntity, RefreshTokenEntity, RevokedFamilyEntity, SigningKeyEntity, LoginLockEntity],
    migrations: [
      { name: "protection-0001-identity", class: ProtectionIdentity0001 },
      { name: "protection-0002-rate-limits", class: rateLimits.migrations[0]! },
    ],
  },
  streams: [protectionStream],
  front: {
    name: "protection",
    title: "device protection REST front (/v1)",
    port: (settings) => settings.fronts.protection.port,
    errorStyle: ErrorStyle.ERROR_MESSAGE,
    jsonNaming: JsonNaming.PROTO_NAME,
  },
  address: (settings) => settings.services.protection.address,
  auth: (settings) => ({ bearer: verifierFor(settings).verifier }),
  commands: [setRoleCommand],
  async start(deps: ModuleDeps<ProtectionSettings>) {
    const uow = createUnitOfWork(deps);
    const { protection } = deps.settings;
    const key = await loadSigningKey(protection.jwt.signingKeyFile, deps.db.em());
    const tokens = createTokenService({ db: deps.db, uow, bus: deps.bus, settings: deps.settings, key, logger: deps.logger });
    await tokens.start();
    verifierFor(deps.settings).bind(tokens);
    const hasher = createPasswordHasher({ memoryKiB: protection.passwords.memoryKiB, iterations: protection.passwords.iterations });
    await applyConfiguredRoles(uow, deps.settings);
    const limits = createRateLimiter({ db: deps.db, table: rateLimits });
    const protectionDeps: ProtectionDeps = { ...deps, uow, hasher, tokens, limits };
    return {
      services: [
        defineService(HealthService, healthService(deps)),
        defineService(AuthService, authService(protectionDeps)),
        defineService(AccountService, accountService(protectionDeps)),
      ],
      workers: [
        { name: "password hasher", stop: () => hasher.close() },
        { name: "token revocations", stop: () => tokens.stop() },
      ],
    };
  },
});
