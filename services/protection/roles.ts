// Platform roles given by configuration (Protection:Admins, Protection:Authorities) and by the
// set-role command: each change is recorded as protection.v1.account.role_changed.
import { AccountRoleChangedSchema } from "../../gen/protection/v1/events_pb.js";
import { ConfigError } from "../runtime/config/index.js";
import type { ModuleCommand } from "../runtime/module/index.js";
import { createUnitOfWork } from "../runtime/outbox/index.js";
import type { UnitOfWork } from "../runtime/outbox/index.js";
import { emailList, type ProtectionRole, protectionRoles, type ProtectionSettings } from "./settings.js";
import { AccountEntity } from "./store/entities.js";

/** Sets one account's role; answers false when no account has this e-mail. */
export async function setRole(uow: UnitOfWork, email: string, role: ProtectionRole): Promise<boolean> {
  return uow.run(async (tx) => {
    const account = await tx.em.findOne(AccountEntity, { email: email.trim().toLowerCase() });
    if (!account) return false;
    if (account.role === role) return true;
    const previousRole = account.role;
    tx.em.assign(account, { role, updatedAt: new Date() });
    tx.record(AccountRoleChangedSchema, { accountId: account.id, role, previousRole });
    return true;
  });
}

/** At start: the configured admins and authorities get their role (nobody is demoted). */
export async function applyConfiguredRoles(uow: UnitOfWork, settings: ProtectionSettings): Promise<void> {
  const authorities = emailList(settings.protection.authorities);
  const admins = emailList(settings.protection.admins);
  for (const email of authorities) if (!admins.has(email)) await setRole(uow, email, "authority");
  for (const email of admins) await setRole(uow, email, "admin");
}

/** `meshwork protection set-role EMAIL user|authority|admin`. */
export const setRoleCommand: ModuleCommand<ProtectionSettings> = {
  name: "set-role",
  usage: `EMAIL ${protectionRoles.join("|")}`,
  description: "Sets an account's platform role.",
  async run(args, deps) {
    const [email, role] = args;
    if (args.length !== 2 || !email || !protectionRoles.includes(role as ProtectionRole)) {
      throw new ConfigError(`usage: meshwork protection set-role EMAIL ${protectionRoles.join("|")}`);
    }
    const found = await setRole(createUnitOfWork(deps), email, role as ProtectionRole);
    if (!found) throw new ConfigError(`no account has the e-mail ${email.trim().toLowerCase()}`);
    return `${email.trim().toLowerCase()} is now ${role}`;
  },
};
