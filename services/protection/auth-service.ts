// protection.v1.AuthService handlers: register, login, refresh, logout and the public keys (the
// password reset's two are in password-reset.ts).
import { Code, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { AuthService } from "../../gen/protection/v1/auth_pb.js";
import { AccountRegisteredSchema } from "../../gen/protection/v1/events_pb.js";
import { currentIdentity } from "../runtime/auth/index.js";
import { clientAddressOf } from "../runtime/host/index.js";
import type { RateLimitRule } from "../runtime/rate-limit/index.js";
import type { ProtectionDeps } from "./deps.js";
import { lockAddress } from "./relations.js";
import { checkDisplayName, checkEmail, checkPassword } from "./domain/account-rules.js";
import { uuidv7 } from "./domain/ids.js";
import { accepted, rateLimited, refusal, unauthenticated, withinLimit } from "./errors.js";
import { claimPartnerInvitations } from "./partner-service.js";
import { passwordResetHandlers } from "./password-reset.js";
import { claimOrganizationInvitations } from "./organization-members.js";
import { emailList, type ProtectionSettings } from "./settings.js";
import { AccountEntity, type AccountRow, LoginLockEntity } from "./store/entities.js";
import { bearerOf } from "./tokens/token-service.js";
import { digestKey } from "../runtime/rate-limit/index.js";

const INVALID_CREDENTIALS = "The e-mail or the password is wrong.";

/** The role the settings grant an e-mail, if any. */
export function configuredRole(settings: ProtectionSettings, email: string): "admin" | "authority" | undefined {
  if (emailList(settings.protection.admins).has(email)) return "admin";
  if (emailList(settings.protection.authorities).has(email)) return "authority";
  return undefined;
}

/** The rate limiter's key of an e-mail's failed logins (a successful login or a reset clears it). */
export const loginFailuresKey = (email: string) => `login-failures:${email}`;

export function isUniqueViolation(err: unknown): boolean {
  return (
    (err as { code?: string } | null)?.code === "23505" || (err as { name?: string } | null)?.name === "UniqueConstraintViolationException"
  );
}

export function authService(deps: ProtectionDeps): ServiceImpl<typeof AuthService> {
  const { protection } = deps.settings;

  const limit = (key: string, rule: RateLimitRule) => withinLimit(deps.limits, key, rule);

  async function lockedFor(email: string): Promise<number> {
    const lock = await deps.db.em().findOne(LoginLockEntity, { emailHash: digestKey(email) });
    const left = lock ? Math.ceil((lock.lockedUntil.getTime() - Date.now()) / 1000) : 0;
    return Math.max(left, 0);
  }

  async function recordFailure(email: string): Promise<void> {
    const { maxFailures, windowSeconds, durationSeconds } = protection.lockout;
    const failures = await deps.limits.hit(loginFailuresKey(email), { limit: maxFailures, windowSeconds });
    if (failures.hits < maxFailures) return;
    const lockedUntil = new Date(Date.now() + durationSeconds * 1000);
    await deps.db
      .em()
      .getConnection()
      .execute(
        `insert into "protection_login_lock" ("email_hash", "locked_until") values (?, ?)
         on conflict ("email_hash") do update set "locked_until" = excluded."locked_until"`,
        [digestKey(email), lockedUntil],
      );
    await deps.limits.reset(loginFailuresKey(email));
  }

  return {
    async register(req, ctx) {
      await limit(`register-ip:${clientAddressOf(ctx.requestHeader)}`, protection.rateLimits.register);
      const email = accepted(checkEmail(req.email));
      const displayName = accepted(checkDisplayName(req.displayName));
      accepted(checkPassword(req.password, { email, displayName }));
      const passwordHash = await deps.hasher.hash(req.password);
      const now = new Date();
      const account: AccountRow = {
        id: uuidv7(now.getTime()),
        email,
        displayName,
        passwordHash,
        role: configuredRole(deps.settings, email) ?? "user",
        createdAt: now,
        updatedAt: now,
      };
      try {
        await deps.uow.run(async (tx) => {
          await lockAddress(tx.em, email);
          tx.em.persist(tx.em.create(AccountEntity, account));
          tx.record(AccountRegisteredSchema, { accountId: account.id, role: account.role });
          await claimPartnerInvitations(tx.em, account);
          await claimOrganizationInvitations(tx, account);
        });
      } catch (err) {
        if (isUniqueViolation(err))
          throw refusal(Code.AlreadyExists, "EMAIL_ALREADY_EXISTS", "An account with this e-mail already exists.");
        throw err;
      }
      return { accountId: account.id, email, displayName };
    },

    async login(req, ctx) {
      const email = req.email.trim().toLowerCase();
      await limit(`login-ip:${clientAddressOf(ctx.requestHeader)}`, protection.rateLimits.loginPerIp);
      await limit(`login-email:${email}`, protection.rateLimits.loginPerEmail);
      const locked = await lockedFor(email);
      if (locked > 0) throw rateLimited(locked, "Too many failed logins for this e-mail; try again later.");
      const account = await deps.db.em().findOne(AccountEntity, { email });
      // An unknown e-mail costs a hash too: the time says nothing about which accounts exist.
      let ok = false;
      if (account) ok = await deps.hasher.verify(account.passwordHash, req.password);
      else await deps.hasher.verifyNothing(req.password);
      if (!account || !ok) {
        await recordFailure(email);
        throw unauthenticated("INVALID_CREDENTIALS", INVALID_CREDENTIALS);
      }
      await deps.limits.reset(loginFailuresKey(email));
      const pair = await deps.uow.run((tx) => deps.tokens.issue(tx, account));
      return pair;
    },

    async refresh(req) {
      return deps.tokens.refresh(req.refreshToken, (em, id) => em.findOne(AccountEntity, { id }));
    },

    async logout(_req, _ctx: HandlerContext) {
      const caller = bearerOf(currentIdentity());
      await deps.uow.run((tx) => deps.tokens.revokeFamily(tx, caller.sid, caller.name, "logout"));
      return {};
    },

    ...passwordResetHandlers(deps),

    getJwks() {
      const jwk = deps.tokens.key.publicKey.export({ format: "jwk" });
      return { keys: [{ kty: jwk.kty!, crv: jwk.crv!, x: jwk.x!, kid: deps.tokens.key.kid, use: "sig", alg: "EdDSA" }] };
    },
  };
}
