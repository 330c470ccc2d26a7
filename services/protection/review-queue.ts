// The review queue: reports of domains (accounts' here, federated ones through recordDomainReport)
// gather in one open item per domain (a partial unique index decides between concurrent reports);
// protection.v1.ReviewQueueService handlers approve (an entry, listed at the next compilation),
// reject or defer items, one by one, by domain or in bulk with a result per id.
import { Code, type ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { IsolationLevel } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  ReviewItemApprovedSchema,
  ReviewItemDeferredSchema,
  ReviewItemRejectedSchema,
  ReviewItemReportedSchema,
} from "../../gen/protection/v1/events_pb.js";
import type { ReviewQueueService } from "../../gen/protection/v1/review_queue_pb.js";
import { isUuid } from "../runtime/errors/index.js";
import type { Transaction } from "../runtime/outbox/index.js";
import { isUniqueViolation } from "./auth-service.js";
import { createEntry } from "./blocklist-admin-service.js";
import { pgTextArray } from "./blocklist-versions.js";
import type { ProtectionDeps } from "./deps.js";
import { categories, checkDomain, checkOneOf, checkPage, checkText, reviewStatuses } from "./domain/blocklist-rules.js";
import { uuidv7 } from "./domain/ids.js";
import { accepted, refusal, validationError } from "./errors.js";
import { BlocklistEntryEntity } from "./store/blocklist.js";

/** Contexts kept per item: the first ones tell an admin enough. */
const MAX_CONTEXTS = 100;
const NOTES_MAX = 1000;
const BULK_MAX = 100;

export interface DomainReport {
  /** Normalised (normalizeDomain). */
  domain: string;
  source: "agent" | "federated";
  reason: string;
  /** 0..1; an agent report counts 0.5. */
  confidence: number;
  context: string | null;
  /** The reporting account (agent reports). */
  accountId?: string;
}

interface ItemRow {
  id: string;
  domain: string;
  status: string;
  report_count: number;
  sources: string[];
  reasons: string[];
  confidence_sum: number;
  contexts: string[];
  first_reported_at: Date;
  last_reported_at: Date;
  defer_until: Date | null;
  notes: string | null;
  category: string | null;
  entry_id: string | null;
  resolved_at: Date | null;
}

const COLUMNS = `"id", "domain", "status", "report_count", "sources", "reasons", "confidence_sum", "contexts", "first_reported_at",
  "last_reported_at", "defer_until", "notes", "category", "entry_id", "resolved_at"`;

function sql<T = Record<string, unknown>>(em: EntityManager, text: string, params: unknown[] = []): Promise<T[]> {
  return em.getConnection().execute<T[]>(text, params, "all", em.getTransactionContext());
}

/** A deferred item whose time has come reads pending. */
function statusOf(row: ItemRow, now: Date): string {
  // The driver may hand timestamps over as text: compare times, not values.
  return row.status === "deferred" && row.defer_until !== null && new Date(row.defer_until).getTime() <= now.getTime()
    ? "pending"
    : row.status;
}

function toItem(row: ItemRow, now = new Date()) {
  const count = Number(row.report_count);
  return {
    id: row.id,
    domain: row.domain,
    status: statusOf(row, now),
    reportCount: count,
    sources: row.sources,
    reasons: row.reasons,
    avgConfidence: count > 0 ? Math.round((Number(row.confidence_sum) / count) * 1000) / 1000 : 0,
    contexts: row.contexts,
    firstReportedAt: timestampFromDate(new Date(row.first_reported_at)),
    lastReportedAt: timestampFromDate(new Date(row.last_reported_at)),
    ...(row.defer_until ? { deferUntil: timestampFromDate(new Date(row.defer_until)) } : {}),
    ...(row.notes !== null ? { notes: row.notes } : {}),
    ...(row.category !== null ? { category: row.category } : {}),
    ...(row.entry_id !== null ? { entryId: row.entry_id } : {}),
    ...(row.resolved_at ? { resolvedAt: timestampFromDate(new Date(row.resolved_at)) } : {}),
  };
}

/**
 * Records one report in `tx`: an agent report is kept (for the federated upstream); unless the
 * domain is listed, it opens the domain's review item or adds to the open one.
 */
export async function recordDomainReport(tx: Transaction, report: DomainReport): Promise<void> {
  const { em } = tx;
  const now = new Date();
  if (report.source === "agent") {
    await sql(
      em,
      `insert into "protection_blocklist_report" ("id", "account_id", "domain", "reason", "context", "created_at") values (?, ?, ?, ?, ?, ?)`,
      [uuidv7(now.getTime()), report.accountId ?? null, report.domain, report.reason, report.context, now],
    );
  }
  if ((await em.count(BlocklistEntryEntity, { domain: report.domain })) > 0) return;
  const [item] = await sql<{ id: string; report_count: number }>(
    em,
    `insert into "protection_review_item" as r
       ("id", "domain", "status", "report_count", "sources", "reasons", "confidence_sum", "contexts", "first_reported_at", "last_reported_at")
       values (?, ?, 'pending', 1, array[?]::text[], array[?]::text[], ?, ?::text[], ?, ?)
     on conflict ("domain") where "status" in ('pending', 'deferred') do update set
       "report_count" = r."report_count" + 1,
       "sources" = case when excluded."sources"[1] = any(r."sources") then r."sources" else r."sources" || excluded."sources" end,
       "reasons" = case when excluded."reasons"[1] = any(r."reasons") then r."reasons" else r."reasons" || excluded."reasons" end,
       "confidence_sum" = r."confidence_sum" + excluded."confidence_sum",
       "contexts" = case when cardinality(r."contexts") >= ${MAX_CONTEXTS} then r."contexts" else r."contexts" || excluded."contexts" end,
       "last_reported_at" = excluded."last_reported_at"
     returning "id", "report_count"`,
    [
      uuidv7(now.getTime()),
      report.domain,
      report.source,
      report.reason,
      report.confidence,
      pgTextArray(report.context === null ? [] : [report.context]),
      now,
      now,
    ],
  );
  tx.record(ReviewItemReportedSchema, {
    reviewItemId: item!.id,
    domain: report.domain,
    source: report.source,
    reportCount: Number(item!.report_count),
  });
}

type Action =
  | { kind: "approve"; notes: string | null; category: string }
  | { kind: "reject"; notes: string | null }
  | { kind: "defer"; notes: string | null; deferUntil: Date };

type Outcome = { ok: true; row: ItemRow } | { ok: false; error: "REVIEW_ITEM_NOT_FOUND" | "ALREADY_RESOLVED"; status: string | null };

const itemNotFound = () => refusal(Code.NotFound, "REVIEW_ITEM_NOT_FOUND", "No such review item.");
const failure = (outcome: Extract<Outcome, { ok: false }>): ConnectError =>
  outcome.error === "REVIEW_ITEM_NOT_FOUND"
    ? itemNotFound()
    : refusal(Code.Aborted, "ALREADY_RESOLVED", "This review item is already resolved (approved or rejected).");

async function act(tx: Transaction, id: string, action: Action): Promise<Outcome> {
  if (!isUuid(id)) return { ok: false, error: "REVIEW_ITEM_NOT_FOUND", status: null };
  const [item] = await sql<ItemRow>(tx.em, `select ${COLUMNS} from "protection_review_item" where "id" = ? for update`, [id]);
  if (!item) return { ok: false, error: "REVIEW_ITEM_NOT_FOUND", status: null };
  if (item.status === "approved" || item.status === "rejected") return { ok: false, error: "ALREADY_RESOLVED", status: item.status };
  const now = new Date();
  let updated: ItemRow | undefined;
  if (action.kind === "approve") {
    const existing = await tx.em.findOne(BlocklistEntryEntity, { domain: item.domain });
    const entry =
      existing ??
      (await createEntry(
        tx,
        {
          domain: item.domain,
          reason: item.sources.includes("agent") ? "agent_report" : "federated_report",
          category: action.category,
          notes: action.notes,
        },
        item.id,
      ));
    [updated] = await sql<ItemRow>(
      tx.em,
      `update "protection_review_item" set "status" = 'approved', "notes" = coalesce(?, "notes"), "category" = ?, "entry_id" = ?,
         "resolved_at" = ? where "id" = ? returning ${COLUMNS}`,
      [action.notes, action.category, entry.id, now, item.id],
    );
    tx.record(ReviewItemApprovedSchema, { reviewItemId: item.id, domain: item.domain, entryId: entry.id });
  } else if (action.kind === "reject") {
    [updated] = await sql<ItemRow>(
      tx.em,
      `update "protection_review_item" set "status" = 'rejected', "notes" = coalesce(?, "notes"), "resolved_at" = ?
         where "id" = ? returning ${COLUMNS}`,
      [action.notes, now, item.id],
    );
    tx.record(ReviewItemRejectedSchema, { reviewItemId: item.id, domain: item.domain });
  } else {
    [updated] = await sql<ItemRow>(
      tx.em,
      `update "protection_review_item" set "status" = 'deferred', "notes" = coalesce(?, "notes"), "defer_until" = ?
         where "id" = ? returning ${COLUMNS}`,
      [action.notes, action.deferUntil, item.id],
    );
    tx.record(ReviewItemDeferredSchema, { reviewItemId: item.id, domain: item.domain, deferUntil: timestampFromDate(action.deferUntil) });
  }
  return { ok: true, row: updated! };
}

export function reviewQueueService(deps: ProtectionDeps): ServiceImpl<typeof ReviewQueueService> {
  /** One action in its own transaction; an entry an admin added meanwhile is found on the retry. */
  async function run(id: string, action: Action): Promise<Outcome> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await deps.uow.run((tx) => act(tx, id, action));
      } catch (err) {
        if (attempt === 0 && isUniqueViolation(err)) continue;
        throw err;
      }
    }
  }

  async function single(id: string, action: Action) {
    const outcome = await run(id, action);
    if (!outcome.ok) throw failure(outcome);
    return toItem(outcome.row);
  }

  async function list(where: string, params: unknown[], order: string, input: { page?: number; perPage?: number }) {
    const page = accepted(checkPage(input));
    return deps.db.em().transactional(
      async (em) => {
        const [count] = await sql<{ total: number }>(
          em,
          `select count(*)::int as "total" from "protection_review_item" where ${where}`,
          params,
        );
        const rows = await sql<ItemRow>(
          em,
          `select ${COLUMNS} from "protection_review_item" where ${where} order by ${order} limit ? offset ?`,
          [...params, page.perPage, page.offset],
        );
        const now = new Date();
        return { data: rows.map((r) => toItem(r, now)), page: page.page, perPage: page.perPage, total: Number(count?.total ?? 0) };
      },
      { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true },
    );
  }

  const PENDING = `("status" = 'pending' or ("status" = 'deferred' and "defer_until" <= ?))`;
  const notes = (value: string | undefined) => accepted(checkText("notes", value, NOTES_MAX));
  const category = (value: string | undefined) => accepted(checkOneOf("category", value ?? "other", categories));

  async function bulk(ids: readonly string[], action: Action) {
    if (ids.length < 1 || ids.length > BULK_MAX) throw validationError("ids", `ids must hold 1 to ${BULK_MAX} ids`);
    const results = [];
    for (const id of ids) {
      const outcome = await run(id, action);
      results.push(
        outcome.ok
          ? { id, ok: true, status: statusOf(outcome.row, new Date()) }
          : { id, ok: false, ...(outcome.status !== null ? { status: outcome.status } : {}), error: outcome.error },
      );
    }
    const succeeded = results.filter((r) => r.ok).length;
    return { results, succeeded, failed: results.length - succeeded };
  }

  return {
    listPendingReviewItems(req) {
      return list(PENDING, [new Date()], `"first_reported_at" asc, "id" asc`, req);
    },

    listReviewItems(req) {
      const order = `"last_reported_at" desc, "id" desc`;
      if (req.status === undefined) return list("true", [], order, req);
      const status = accepted(checkOneOf("status", req.status, reviewStatuses));
      if (status === "pending") return list(PENDING, [new Date()], order, req);
      if (status === "deferred") return list(`"status" = 'deferred' and "defer_until" > ?`, [new Date()], order, req);
      return list(`"status" = ?`, [status], order, req);
    },

    async getReviewItem(req) {
      if (!isUuid(req.id)) throw itemNotFound();
      const [row] = await sql<ItemRow>(deps.db.em(), `select ${COLUMNS} from "protection_review_item" where "id" = ?`, [req.id]);
      if (!row) throw itemNotFound();
      return toItem(row);
    },

    approveReviewItem(req) {
      return single(req.id, { kind: "approve", notes: notes(req.notes), category: category(req.category) });
    },

    rejectReviewItem(req) {
      return single(req.id, { kind: "reject", notes: notes(req.notes) });
    },

    deferReviewItem(req) {
      const deferUntil = timestampDate(req.deferUntil!);
      if (!(deferUntil.getTime() > Date.now())) throw validationError("defer_until", "defer_until must be in the future");
      return single(req.id, { kind: "defer", notes: notes(req.notes), deferUntil });
    },

    async resolveReviewDomain(req) {
      const domain = accepted(checkDomain(req.domain));
      const kind = accepted(checkOneOf("action", req.action, ["approve", "reject"] as const));
      const action: Action =
        kind === "approve" ? { kind, notes: notes(req.notes), category: category(req.category) } : { kind, notes: notes(req.notes) };
      const [open] = await sql<{ id: string }>(
        deps.db.em(),
        `select "id" from "protection_review_item" where "domain" = ? and "status" in ('pending', 'deferred')`,
        [domain],
      );
      if (!open) throw itemNotFound();
      const outcome = await run(open.id, action);
      if (!outcome.ok) throw failure(outcome);
      return { domain, status: outcome.row.status, ...(outcome.row.entry_id !== null ? { entryId: outcome.row.entry_id } : {}) };
    },

    bulkApproveReviewItems(req) {
      return bulk(req.ids, { kind: "approve", notes: null, category: "other" });
    },

    bulkRejectReviewItems(req) {
      return bulk(req.ids, { kind: "reject", notes: null });
    },
  };
}
