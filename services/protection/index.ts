// Device protection (interface: shared/spec/protection-api.md), as a module the mesh can host: its
// front listens on :8081 with snake_case JSON and `{ error, message }` errors. Today it serves
// health, accounts and EdDSA access tokens with rotating refresh tokens, with rate limits and a
// login lockout kept in PostgreSQL, the password reset by mail, accountability partners,
// organizations with their members, devices and bulk enrollment tokens (redeemed at
// /v1/enroll/{token}), devices with X.509 certificates and their enrollments, and the
// Ed25519-signed blocklist with its admin entries, review queue and app signatures, device events
// sent by agents or recorded by the service with their analytics and reports, federated reports
// (and the worker that sends agent reports upstream), the Tor exit list and hosted billing.
import { AccountService } from "../../gen/protection/v1/account_pb.js";
import { AnalyticsService } from "../../gen/protection/v1/analytics_pb.js";
import { AppSignatureService } from "../../gen/protection/v1/app_signature_pb.js";
import { AuthService } from "../../gen/protection/v1/auth_pb.js";
import { BlocklistAdminService } from "../../gen/protection/v1/blocklist_admin_pb.js";
import { BillingService } from "../../gen/protection/v1/billing_pb.js";
import { BlocklistService } from "../../gen/protection/v1/blocklist_pb.js";
import { FederationService } from "../../gen/protection/v1/federation_pb.js";
import { DeviceEventService } from "../../gen/protection/v1/device_event_pb.js";
import { HealthService } from "../../gen/protection/v1/health_pb.js";
import { PartnerService } from "../../gen/protection/v1/partner_pb.js";
import { OrganizationService } from "../../gen/protection/v1/organization_pb.js";
import { ReviewQueueService } from "../../gen/protection/v1/review_queue_pb.js";
import { ErrorStyle, JsonNaming } from "../../gen/meshwork/api/v1/options_pb.js";
import { defineService } from "../runtime/host/index.js";
import { defineModule, type ModuleDeps } from "../runtime/module/index.js";
import { createMailQueue, mailTables } from "../runtime/mail/index.js";
import { createUnitOfWork } from "../runtime/outbox/index.js";
import { createRateLimiter, rateLimitTable } from "../runtime/rate-limit/index.js";
import { accountService } from "./account-service.js";
import { analyticsService } from "./analytics-service.js";
import { appSignatureService } from "./app-signature-service.js";
import { authService } from "./auth-service.js";
import { billingService, checkBillingSettings } from "./billing-service.js";
import { blocklistAdminService } from "./blocklist-admin-service.js";
import { startCompileWorker } from "./blocklist-compile-worker.js";
import { blocklistService } from "./blocklist-service.js";
import { createBlocklistVersions, loadBlocklistSigner } from "./blocklist-versions.js";
import type { ProtectionDeps } from "./deps.js";
import { deviceEventService } from "./device-event-service.js";
import { protectionStream } from "./events/subjects.js";
import { startFederatedUpstream } from "./federated-upstream.js";
import { federatedKeyring, federationService } from "./federation-service.js";
import { healthService } from "./health-service.js";
import { partnerService } from "./partner-service.js";
import { organizationService } from "./organization-service.js";
import { loadTokenSealKey } from "./organization-tokens.js";
import { reviewQueueService } from "./review-queue.js";
import { createPasswordHasher } from "./passwords/password-hasher.js";
import { applyConfiguredRoles, setRoleCommand } from "./roles.js";
import { type ProtectionSettings, protectionRenamedSettings, protectionSettings } from "./settings.js";
import { AppSignatureEntity, BlocklistEntryEntity } from "./store/blocklist.js";
import { AccountEntity, LoginLockEntity, RefreshTokenEntity, RevokedFamilyEntity, SigningKeyEntity } from "./store/entities.js";
import { ProtectionIdentity0001 } from "./store/migrations/0001-identity.js";
import { ProtectionRelations0003 } from "./store/migrations/0003-relations.js";
import { ProtectionPasswordReset0006 } from "./store/migrations/0006-password-reset.js";
import { ProtectionOrganizationTokens0005 } from "./store/migrations/0005-organization-tokens.js";
import { OrganizationTokenEntity, OrganizationTokenKeyEntity } from "./store/organization-tokens.js";
import { ProtectionBlocklist0007 } from "./store/migrations/0007-blocklist.js";
import { ProtectionFederation0009 } from "./store/migrations/0009-federation.js";
import { startTorExitWorker } from "./tor-exit-worker.js";
import { ProtectionDeviceEvents0008 } from "./store/migrations/0008-device-events.js";
import { OrganizationEntity, OrganizationMemberEntity, PartnerEntity } from "./store/relations.js";
import { loadSigningKey } from "./tokens/signing-key.js";
import { createTokenService, type TokenService } from "./tokens/token-service.js";
import { devicesEntities, devicesMigration, devicesServices, enrollmentTokens, prepareDevices, startDevices } from "./devices/index.js";
import { organizationTokens } from "./organization-enrollments.js";

export { blocklistPublicKeyInfo, currentBlocklistVersion } from "./blocklist-versions.js";
export { protectionStream, subjects } from "./events/subjects.js";

const rateLimits = rateLimitTable("protection_rate_limit");
const mailQueue = mailTables("protection");

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
  renamedSettings: protectionRenamedSettings,
  services: [
    HealthService,
    AuthService,
    AccountService,
    PartnerService,
    OrganizationService,
    ...devicesServices,
    BlocklistService,
    BlocklistAdminService,
    ReviewQueueService,
    AppSignatureService,
    FederationService,
    BillingService,
    DeviceEventService,
    AnalyticsService,
  ],
  database: {
    name: "protection",
    entities: [
      AccountEntity,
      RefreshTokenEntity,
      RevokedFamilyEntity,
      SigningKeyEntity,
      LoginLockEntity,
      PartnerEntity,
      OrganizationEntity,
      OrganizationMemberEntity,
      OrganizationTokenEntity,
      OrganizationTokenKeyEntity,
      BlocklistEntryEntity,
      AppSignatureEntity,
      ...mailQueue.entities,
      ...devicesEntities,
    ],
    migrations: [
      { name: "protection-0001-identity", class: ProtectionIdentity0001 },
      { name: "protection-0002-rate-limits", class: rateLimits.migrations[0]! },
      { name: "protection-0003-relations", class: ProtectionRelations0003 },
      { name: "protection-0003-mail-queue", class: mailQueue.migrations[0]! },
      devicesMigration,
      { name: "protection-0005-organization-tokens", class: ProtectionOrganizationTokens0005 },
      { name: "protection-0006-password-reset", class: ProtectionPasswordReset0006 },
      { name: "protection-0007-blocklist", class: ProtectionBlocklist0007 },
      { name: "protection-0009-federation", class: ProtectionFederation0009 },
      { name: "protection-0008-device-events", class: ProtectionDeviceEvents0008 },
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
    // What can refuse to start (keys, the CA, settings that disagree) is loaded before anything
    // runs: past this point nothing awaits, so no worker is left running by a failed start.
    checkBillingSettings(protection.billing);
    const keyring = federatedKeyring(protection.federated.apiKeys);
    const blocklistSigner = await loadBlocklistSigner(deps.db.em(), protection.blocklist.signingKey);
    const devicesReady = await prepareDevices(deps, blocklistSigner);
    const key = await loadSigningKey(protection.jwt.signingKeyFile, deps.db.em());
    const sealKey = await loadTokenSealKey(protection.organizations.tokenKeyFile, deps.db.em());
    await applyConfiguredRoles(uow, deps.settings);
    const tokens = createTokenService({ db: deps.db, uow, bus: deps.bus, settings: deps.settings, key, logger: deps.logger });
    await tokens.start();
    verifierFor(deps.settings).bind(tokens);
    const hasher = createPasswordHasher({ memoryKiB: protection.passwords.memoryKiB, iterations: protection.passwords.iterations });
    const limits = createRateLimiter({ db: deps.db, table: rateLimits });
    const mail = createMailQueue({
      tables: mailQueue,
      db: deps.db,
      logger: deps.logger,
      settings: protection.smtp,
      settingsSection: "Protection:Smtp",
      dataDir: deps.runtime.data.dir,
    });
    mail.start();
    const protectionDeps: ProtectionDeps = { ...deps, uow, hasher, tokens, limits, mail };
    const devices = startDevices(protectionDeps, devicesReady, [enrollmentTokens, organizationTokens(deps.settings)]);
    const blocklist = createBlocklistVersions({
      db: deps.db,
      uow,
      signer: blocklistSigner,
      retainedVersions: protection.blocklist.retainedVersions,
    });
    const compiler = startCompileWorker(blocklist, protection.blocklist.compileIntervalSeconds, deps.logger);
    const torExits = startTorExitWorker({ uow, logger: deps.logger }, protection.torExits);
    const { federated } = protection;
    const upstream = federated.upstream
      ? startFederatedUpstream(
          { uow, logger: deps.logger },
          { upstream: federated.upstream, apiKey: federated.upstreamApiKey ?? "", intervalSeconds: federated.upstreamIntervalSeconds },
        )
      : undefined;
    return {
      services: [
        defineService(HealthService, healthService(deps)),
        defineService(AuthService, authService(protectionDeps)),
        defineService(AccountService, accountService(protectionDeps)),
        defineService(PartnerService, partnerService(protectionDeps)),
        defineService(OrganizationService, organizationService(protectionDeps, sealKey)),
        ...devices.services,
        defineService(BlocklistService, blocklistService(protectionDeps, blocklist)),
        defineService(BlocklistAdminService, blocklistAdminService(protectionDeps, blocklist)),
        defineService(ReviewQueueService, reviewQueueService(protectionDeps)),
        defineService(AppSignatureService, appSignatureService(protectionDeps)),
        defineService(FederationService, federationService(protectionDeps, keyring)),
        defineService(BillingService, billingService(protectionDeps, protection.billing)),
        defineService(DeviceEventService, deviceEventService(protectionDeps)),
        defineService(AnalyticsService, analyticsService(protectionDeps)),
      ],
      workers: [
        { name: "password hasher", stop: () => hasher.close() },
        { name: "token revocations", stop: () => tokens.stop() },
        { name: `mail to ${mail.target}`, stop: () => mail.stop() },
        ...devices.workers,
        { name: "blocklist compiler", stop: () => compiler.stop() },
        { name: "Tor exit list", stop: () => torExits.stop() },
        ...(upstream ? [{ name: `federated reports to ${upstream.target}`, stop: () => upstream.stop() }] : []),
      ],
    };
  },
});
