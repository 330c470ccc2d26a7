// The mail queue table of one module, `<prefix>_mail_queue`, created by a migration the module
// lists under its own name, as webhook tables are: a module running in its own process against
// its own database keeps its own mail.
import { type Constructor, EntitySchema } from "@mikro-orm/core";
import type { Migration } from "@mikro-orm/migrations";
import { mailQueueMigration } from "./migrations/mail-0001-queue.js";

export type MailStatus = "pending" | "failed";

export interface MailRow {
  id: string;
  recipient: string;
  subject: string;
  textBody: string;
  htmlBody: string | null;
  status: MailStatus;
  /** Attempts started so far. */
  attemptCount: number;
  /** When the next attempt is due; while one runs, when its lease ends. */
  nextAttemptAt: Date;
  /** Set while an instance holds the message for an attempt. */
  leaseToken: string | null;
  /** What the last failure was (the server's answer or the connection error), never the message. */
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface MailTables {
  /** `${prefix}_mail_queue`. */
  queue: string;
  entity: EntitySchema<MailRow>;
  // biome-ignore lint/suspicious/noExplicitAny: EntitySchema is invariant; the database module takes any
  entities: EntitySchema<any, any>[];
  /** In order; the module lists each under a name of its own (`<module>-...`). */
  migrations: Constructor<Migration>[];
}

const PREFIX = /^[a-z][a-z0-9_]{0,40}$/;
const timestamptz = { type: "Date", columnType: "timestamptz" } as const;

/** The queue of one module, e.g. `mailTables("orders")`: orders_mail_queue. */
export function mailTables(prefix: string): MailTables {
  // The prefix goes into SQL text as an identifier: only a plain lower-case name is taken.
  if (!PREFIX.test(prefix)) throw new Error(`mail table prefix "${prefix}" must be a lower-case SQL name`);
  const queue = `${prefix}_mail_queue`;
  const entityName = `${prefix
    .split("_")
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("")}MailQueue`;
  const entity = new EntitySchema<MailRow>({
    name: entityName,
    tableName: queue,
    properties: {
      id: { type: "uuid", primary: true },
      recipient: { type: "text" },
      subject: { type: "text" },
      textBody: { type: "text" },
      htmlBody: { type: "text", nullable: true },
      status: { type: "text" },
      attemptCount: { type: "integer" },
      nextAttemptAt: { ...timestamptz },
      leaseToken: { type: "uuid", nullable: true },
      lastError: { type: "text", nullable: true },
      createdAt: { ...timestamptz },
      updatedAt: { ...timestamptz },
    },
  });
  return { queue, entity, entities: [entity], migrations: [mailQueueMigration(queue)] };
}
