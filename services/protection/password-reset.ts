// The password reset by mail, as two AuthService handlers: forgot-password mails a one-time token
// (stored as SHA-256, the newest supersedes the others), reset-password spends it on a new
// password, revokes every token family of the account and lifts its login lock.
import { createHash, randomBytes } from "node:crypto";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { AuthService } from "../../gen/protection/v1/auth_pb.js";
import { AccountPasswordResetSchema } from "../../gen/protection/v1/events_pb.js";
import { clientAddressOf } from "../runtime/host/index.js";
import { digestKey, type RateLimitRule } from "../runtime/rate-limit/index.js";
import { loginFailuresKey } from "./auth-service.js";
import type { ProtectionDeps } from "./deps.js";
import { checkEmail, checkPassword } from "./domain/account-rules.js";
import { accepted, unauthenticated, validationError, withinLimit } from "./errors.js";
import type { ProtectionSettings } from "./settings.js";
import { AccountEntity } from "./store/entities.js";

const RESET_SHAPE = /^rst_[0-9a-f]{64}$/;
/** Where the mailed link points: a page of the client app served under Protection:PublicBaseUrl. */
export const RESET_PAGE_PATH = "/reset-password";

const FORGOT_MESSAGE = "If an account uses this e-mail address, a message with a reset link is on its way.";
const RESET_MESSAGE = "The password was changed; every session of the account was signed out.";

const hashResetToken = (token: string) => createHash("sha256").update(token).digest("hex");

/** An absolute URL under Protection:PublicBaseUrl (which may carry a path of its own). */
export function publicUrl(settings: ProtectionSettings, path: string): string {
  return `${settings.protection.publicBaseUrl.replace(/\/+$/, "")}${path}`;
}

/** Forgets the reset tokens of an account (a reset used one, or its e-mail changed). */
export async function dropResetTokens(em: EntityManager, accountId: string): Promise<void> {
  await em
    .getConnection()
    .execute(`delete from "protection_password_reset" where "account_id" = ?`, [accountId], "run", em.getTransactionContext());
}

type ResetHandlers = Pick<ServiceImpl<typeof AuthService>, "forgotPassword" | "resetPassword">;

export function passwordResetHandlers(deps: ProtectionDeps): ResetHandlers {
  const { protection } = deps.settings;
  const invalid = () => unauthenticated("INVALID_RESET_TOKEN", "The reset token is not valid; ask for a new one.");

  const limit = (key: string, rule: RateLimitRule) => withinLimit(deps.limits, key, rule);

  return {
    async forgotPassword(req) {
      const email = accepted(checkEmail(req.email));
      await limit(`forgot-email:${email}`, protection.rateLimits.forgotPassword);
      // One transaction either way, and the mail is only queued: the answer's time says nothing
      // about whether the address holds an account.
      await deps.uow.run(async (tx) => {
        const account = await tx.em.findOne(AccountEntity, { email });
        if (!account) return;
        const now = new Date();
        const lifetimeMinutes = protection.passwordReset.tokenLifetimeMinutes;
        const token = `rst_${randomBytes(32).toString("hex")}`;
        const conn = tx.em.getConnection();
        const ctx = tx.em.getTransactionContext();
        await dropResetTokens(tx.em, account.id);
        await conn.execute(`delete from "protection_password_reset" where "expires_at" <= ?`, [now], "run", ctx);
        await conn.execute(
          `insert into "protection_password_reset" ("token_hash", "account_id", "expires_at", "created_at") values (?, ?, ?, ?)`,
          [hashResetToken(token), account.id, new Date(now.getTime() + lifetimeMinutes * 60_000), now],
          "run",
          ctx,
        );
        const link = `${publicUrl(deps.settings, RESET_PAGE_PATH)}?token=${token}`;
        deps.mail.enqueue(tx.em, {
          to: account.email,
          subject: "Reset your password",
          text: [
            `Hello ${account.displayName},`,
            "",
            "someone, we hope you, asked to reset the password of your Meshwork Protection account.",
            "Choose a new one here:",
            "",
            link,
            "",
            "or send this reset token with POST /v1/auth/reset-password:",
            "",
            token,
            "",
            `It works once, within ${lifetimeMinutes} minutes; a newer request replaces it.`,
            "If you did not ask, ignore this mail: your password stays as it is.",
          ].join("\n"),
        });
      });
      return { message: FORGOT_MESSAGE };
    },

    async resetPassword(req, ctx: HandlerContext) {
      await limit(`reset-ip:${clientAddressOf(ctx.requestHeader)}`, protection.rateLimits.resetPassword);
      if (!RESET_SHAPE.test(req.token)) throw invalid();
      const tokenHash = hashResetToken(req.token);
      const em = deps.db.em();
      const [live] = await em
        .getConnection()
        .execute<{ account_id: string }[]>(
          `select "account_id" from "protection_password_reset" where "token_hash" = ? and "expires_at" > ?`,
          [tokenHash, new Date()],
        );
      const account = live ? await em.findOne(AccountEntity, { id: live.account_id }) : null;
      if (!account) throw invalid();
      // Checked before the token is spent: a refused password leaves it usable.
      const checked = checkPassword(req.newPassword, { email: account.email, displayName: account.displayName });
      if (!checked.ok) throw validationError("new_password", checked.message.replace(/^password\b/, "new_password"));
      const passwordHash = await deps.hasher.hash(req.newPassword);
      const reset = await deps.uow.run(async (tx) => {
        const now = new Date();
        // The one statement that decides: a token is spent once, whoever presents it at the same time.
        const [spent] = await tx.em
          .getConnection()
          .execute<{ account_id: string }[]>(
            `delete from "protection_password_reset" where "token_hash" = ? and "expires_at" > ? returning "account_id"`,
            [tokenHash, now],
            "all",
            tx.em.getTransactionContext(),
          );
        if (!spent) return undefined;
        const found = await tx.em.findOne(AccountEntity, { id: spent.account_id });
        if (!found) return undefined;
        tx.em.assign(found, { passwordHash, updatedAt: now });
        await dropResetTokens(tx.em, found.id);
        await deps.tokens.revokeAccount(tx, found.id, "password_reset");
        await tx.em
          .getConnection()
          .execute(
            `delete from "protection_login_lock" where "email_hash" = ?`,
            [digestKey(found.email)],
            "run",
            tx.em.getTransactionContext(),
          );
        tx.record(AccountPasswordResetSchema, { accountId: found.id });
        return found;
      });
      if (!reset) throw invalid();
      await deps.limits.reset(loginFailuresKey(reset.email));
      return { message: RESET_MESSAGE };
    },
  };
}
