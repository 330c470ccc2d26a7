// An SMTP server on loopback (`smtp-server`, parsed with `mailparser`) that keeps what a mesh sends
// it: start one, pass `--Protection:Smtp:Url=<inbox.url>` to the mesh, wait on `inbox.to(address)`.
import type { AddressInfo } from "node:net";
import { type AddressObject, simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";
import { until } from "./until.js";

export interface ReceivedMail {
  /** Lower-cased recipient addresses (the envelope's). */
  to: string[];
  from: string;
  subject: string;
  text: string;
}

export interface MailInbox {
  readonly url: string;
  readonly received: ReceivedMail[];
  /** Mail received so far for `address`. */
  to(address: string): ReceivedMail[];
  /** Waits until `count` mails for `address` arrived and answers them, oldest first. */
  waitFor(address: string, count?: number, what?: string): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

function addressOf(header: AddressObject | undefined): string {
  return header?.value[0]?.address ?? "";
}

export async function startMailInbox(): Promise<MailInbox> {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      simpleParser(stream).then(
        (mail) => {
          received.push({
            to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
            from: addressOf(mail.from),
            subject: mail.subject ?? "",
            text: mail.text ?? "",
          });
          callback();
        },
        (err: Error) => callback(err),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  const to = (address: string) => received.filter((m) => m.to.includes(address.toLowerCase()));
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    to,
    async waitFor(address, count = 1, what = `${count} mail(s) to ${address}`) {
      return until(() => to(address).length >= count && to(address), what, { timeoutMs: 60_000 });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
