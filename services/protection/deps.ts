// What the device protection handlers need from the process that hosts them.
import type { MailQueue } from "../runtime/mail/index.js";
import type { ModuleDeps } from "../runtime/module/index.js";
import type { UnitOfWork } from "../runtime/outbox/index.js";
import type { RateLimiter } from "../runtime/rate-limit/index.js";
import type { PasswordHasher } from "./passwords/password-hasher.js";
import type { ProtectionSettings } from "./settings.js";
import type { TokenService } from "./tokens/token-service.js";

export type ProtectionDeps = ModuleDeps<ProtectionSettings> & {
  uow: UnitOfWork;
  hasher: PasswordHasher;
  tokens: TokenService;
  limits: RateLimiter;
  /** Mail queued in the caller's transaction: `mail.enqueue(tx.em, { to, subject, text })`. */
  mail: MailQueue;
};
