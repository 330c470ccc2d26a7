// How a message leaves: over SMTP with nodemailer (STARTTLS when offered, or required), or, with
// no relay configured, as an RFC 5322 .eml file under <Data:Dir>/mail/. Errors are described
// without the message and without the relay's password.
import { mkdir, rename, writeFile } from "node:fs/promises";
import { isIP } from "node:net";
import { join } from "node:path";
import type { ConnectionOptions } from "node:tls";
import nodemailer from "nodemailer";
import type Mail from "nodemailer/lib/mailer/index.js";
import { redactUrl } from "../config/index.js";

export interface OutgoingMail {
  id: string;
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string | null;
  createdAt: Date;
}

export interface MailSender {
  /** "smtp://relay:587" (redacted) or the directory files go to: for logs. */
  readonly target: string;
  send(mail: OutgoingMail): Promise<void>;
  close(): void;
}

/** Why an attempt failed, and whether another attempt can help. */
export interface SendFailure {
  error: string;
  permanent: boolean;
}

const timeouts = { connectionTimeout: 15_000, greetingTimeout: 15_000, socketTimeout: 30_000 };
/** The longest an SMTP attempt can take (connection, greeting, then the exchange): the lease must outlast it. */
export const longestAttemptMs = 5 * 60 * 1000;

export function smtpSender(url: string, options: { requireTls: boolean; tls?: ConnectionOptions }): MailSender {
  const parsed = new URL(url);
  const secure = parsed.protocol === "smtps:";
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  const transport = nodemailer.createTransport({
    host,
    port: parsed.port ? Number(parsed.port) : secure ? 465 : 25,
    secure,
    requireTLS: options.requireTls,
    ...(parsed.username ? { auth: { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } } : {}),
    // SNI carries a name, never an address.
    tls: { ...(isIP(host) ? {} : { servername: host }), ...options.tls },
    ...timeouts,
    logger: false,
    debug: false,
  });
  return {
    target: redactUrl(url),
    async send(mail) {
      await transport.sendMail(message(mail));
    },
    close: () => transport.close(),
  };
}

export function fileSender(dir: string): MailSender {
  // CRLF line ends, as RFC 5322 writes them.
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "windows" });
  return {
    target: dir,
    async send(mail) {
      const info = await transport.sendMail(message(mail));
      await mkdir(dir, { recursive: true });
      const name = `${mail.createdAt.toISOString().replace(/[:.]/g, "-")}-${mail.id}.eml`;
      // Written aside, then renamed: a reader never sees half a message.
      const partial = join(dir, `.${name}.partial`);
      await writeFile(partial, info.message as Buffer, { mode: 0o600 });
      await rename(partial, join(dir, name));
    },
    close: () => transport.close(),
  };
}

function message(mail: OutgoingMail): Mail.Options {
  const domain = /@([^>\s]+)>?\s*$/.exec(mail.from)?.[1] ?? "localhost";
  return {
    from: mail.from,
    to: mail.to,
    subject: mail.subject,
    text: mail.text,
    ...(mail.html !== null ? { html: mail.html } : {}),
    messageId: `<${mail.id}@${domain}>`,
    date: mail.createdAt,
    // Plain messages, as typed: no read receipts, no remote content, nothing loaded.
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}

/**
 * What went wrong, for the queue row and the log: the SMTP answer or the connection error, never
 * the message; `secret` (the relay's password) is blanked wherever it appears. A 5xx answer about the
 * message (its envelope or content; not the login or STARTTLS) is permanent: another try gets the same.
 */
export function describeSendError(err: unknown, secret?: string): SendFailure {
  const e = err as { message?: unknown; code?: unknown; responseCode?: unknown; command?: unknown };
  const parts = [typeof e.code === "string" ? e.code : undefined, typeof e.message === "string" ? e.message : String(err)];
  let error = parts.filter(Boolean).join(": ").replace(/\s+/g, " ").slice(0, 500);
  if (secret) error = error.split(secret).join("***");
  const code = typeof e.responseCode === "number" ? e.responseCode : undefined;
  // Only an answer about this message (its envelope or its content); a refused login or STARTTLS is the relay's setup.
  const aboutMessage = e.code === "EENVELOPE" || e.code === "EMESSAGE";
  const permanent = aboutMessage && code !== undefined && code >= 500 && code < 600;
  return { error, permanent };
}
