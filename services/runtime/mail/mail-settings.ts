// The settings a module declares to send mail, under its own section (e.g. `Orders:Smtp:Url`):
// where the SMTP relay is (a secret: the URL may hold a password), whether TLS is required, and
// the sender. Without a URL, mail is written as .eml files under <Data:Dir>/mail/.
import { z } from "zod";
import { setting } from "../config/index.js";

/** `smtpSettings()` as the module's code reads it. */
export interface SmtpSettings {
  /** `smtp://[user:pass@]host[:port]` (STARTTLS when offered) or `smtps://` (TLS from the start); unset: .eml files. */
  url?: string | undefined;
  requireTls: boolean;
  from: string;
}

/** A fragment to put under a module's section: `orders: z.object({ smtp: smtpSettings() })`. */
export function smtpSettings(options: { from?: string } = {}) {
  return z.object({
    url: setting.url({
      protocols: ["smtp:", "smtps:"],
      secret: true,
      description:
        "SMTP relay for outgoing mail: smtp://user:pass@host:port (STARTTLS when the server offers it; credentials optional) or smtps:// (TLS from the start). Unset: each message is written as an .eml file under <Data:Dir>/mail/.",
    }),
    requireTls: setting.bool({
      default: false,
      description: "Refuse to send mail over a connection that did not upgrade to TLS (STARTTLS); the message stays queued and is retried.",
    }),
    from: setting.string({
      default: options.from ?? "Meshwork <no-reply@localhost>",
      description: "Sender address of outgoing mail (From), e.g. `Meshwork <no-reply@example.org>`.",
    }),
  });
}
