// Mail as a library a module configures: a durable queue in the module's own PostgreSQL table,
// filled inside the caller's transaction and emptied by a worker over SMTP (nodemailer) or into
// .eml files, with retries and backoff; the settings fragment a module declares under its section.
export { createMailQueue, MailMessageError, type MailMessage, type MailQueue, type MailQueueOptions } from "./mail-queue.js";
export { smtpSettings, type SmtpSettings } from "./mail-settings.js";
export { mailTables, type MailRow, type MailStatus, type MailTables } from "./mail-tables.js";
