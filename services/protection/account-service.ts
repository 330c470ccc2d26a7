// protection.v1.AccountService handlers: the caller's account, its changes, and others' public profile.
import { Code, type ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { AccountService } from "../../gen/protection/v1/account_pb.js";
import { AccountUpdatedSchema } from "../../gen/protection/v1/events_pb.js";
import { currentIdentity } from "../runtime/auth/index.js";
import { isUuid } from "../runtime/errors/index.js";
import { isUniqueViolation } from "./auth-service.js";
import type { ProtectionDeps } from "./deps.js";
import { checkDisplayName, checkEmail } from "./domain/account-rules.js";
import { accepted, refusal } from "./errors.js";
import { dropResetTokens } from "./password-reset.js";
import { AccountEntity, type AccountRow } from "./store/entities.js";
import { bearerOf } from "./tokens/token-service.js";

const notFound = () => refusal(Code.NotFound, "ACCOUNT_NOT_FOUND", "No such account.");

function toAccount(row: AccountRow, own: boolean) {
  return {
    id: row.id,
    ...(own ? { email: row.email } : {}),
    displayName: row.displayName,
    createdAt: timestampFromDate(row.createdAt),
  };
}

/** The notice to the old address: if the change was not its owner's, they learn of it there. */
function emailChangeNotice(to: string, displayName: string, newEmail: string) {
  return {
    to,
    subject: "Your e-mail address was changed",
    text: [
      `Hello ${displayName},`,
      "",
      `the e-mail address of your Meshwork Protection account was changed from ${to} to ${newEmail}.`,
      "Mail about the account, password resets included, now goes to the new address.",
      "",
      "If you did not make this change, someone else may hold your password: contact your administrator.",
    ].join("\n"),
  };
}

export function accountService(deps: ProtectionDeps): ServiceImpl<typeof AccountService> {
  async function mine(): Promise<AccountRow> {
    const caller = bearerOf(currentIdentity());
    const row = await deps.db.em().findOne(AccountEntity, { id: caller.name });
    if (!row) throw notFound();
    return row;
  }

  return {
    async getMe() {
      return toAccount(await mine(), true);
    },

    async updateMe(req) {
      const caller = bearerOf(currentIdentity());
      const changes: Partial<AccountRow> = {};
      if (req.displayName !== undefined) changes.displayName = accepted(checkDisplayName(req.displayName));
      if (req.email !== undefined) changes.email = accepted(checkEmail(req.email));
      try {
        const row = await deps.uow.run(async (tx) => {
          const found = await tx.em.findOne(AccountEntity, { id: caller.name });
          if (!found) throw notFound();
          const emailChanged = changes.email !== undefined && changes.email !== found.email;
          if (changes.displayName === undefined && !emailChanged) return found;
          const previousEmail = found.email;
          tx.em.assign(found, { ...changes, updatedAt: new Date() });
          tx.record(AccountUpdatedSchema, { accountId: found.id, emailChanged });
          if (emailChanged) {
            // A reset token mailed to the old address no longer opens the account.
            await dropResetTokens(tx.em, found.id);
            deps.mail.enqueue(tx.em, emailChangeNotice(previousEmail, found.displayName, found.email));
          }
          await tx.em.flush();
          return found;
        });
        return toAccount(row, true);
      } catch (err) {
        if (isUniqueViolation(err))
          throw refusal(Code.AlreadyExists, "EMAIL_ALREADY_EXISTS", "An account with this e-mail already exists.");
        throw err;
      }
    },

    async getAccount(req) {
      const caller = bearerOf(currentIdentity());
      if (!isUuid(req.id)) throw notFound();
      const row = await deps.db.em().findOne(AccountEntity, { id: req.id });
      if (!row) throw notFound();
      return toAccount(row, row.id === caller.name);
    },
  };
}
