// The blocklist's versions in PostgreSQL: the signing seed, compilations (one at a time across
// instances, under an advisory lock) and the three signed answers. A version row holds the
// domains it added and removed, so a delta from N is the net of at most RetainedVersions small
// rows; protection_blocklist_domain holds the current version's domains, and a compilation
// compares with them only the domains a trigger logged as changed since the last one. Each version is signed once, when compiled; deltas and the
// full list are signed once per process and cached.
import { IsolationLevel } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import { toJson } from "@bufbuild/protobuf";
import { TimestampSchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { BlocklistCompiledSchema } from "../../gen/protection/v1/events_pb.js";
import { ConfigError } from "../runtime/config/index.js";
import type { UnitOfWork } from "../runtime/outbox/index.js";
import {
  type BlocklistDeltaAnswer,
  type BlocklistFullAnswer,
  type BlocklistSigner,
  type BlocklistVersionAnswer,
  compileBlocklist,
  createBlocklistSigner,
  decodeSigningSeed,
  generateSigningSeed,
  listSha256,
  netChanges,
  planDelta,
  signDeltaAnswer,
  signFullAnswer,
  signingKeySetting,
  signVersionAnswer,
} from "./blocklist/index.js";

/** The advisory lock of compilations: exclusive for a compilation. */
const COMPILE_LOCK = `hashtextextended('protection-blocklist-compile', 0)`;
/** Deltas kept signed in memory (keyed by from and to version, so never stale). */
const DELTA_CACHE_SIZE = 64;

type Row = Record<string, unknown>;

function sql<T = Row>(em: EntityManager, text: string, params: unknown[] = []): Promise<T[]> {
  return em.getConnection().execute<T[]>(text, params, "all", em.getTransactionContext());
}

/** A PostgreSQL text[] literal (bound as one parameter: the driver would spread a JS array). */
export function pgTextArray(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`).join(",")}}`;
}

/** The proto3 JSON text of a time as the front writes it, the text the signature covers. */
export const timestampText = (at: Date): string => toJson(TimestampSchema, timestampFromDate(at)) as string;

/** The current version, 0 before the first compilation (what heartbeats and device configs carry). */
export async function currentBlocklistVersion(em: EntityManager): Promise<number> {
  const [row] = await sql<{ version: number | null }>(em, `select max("version") as "version" from "protection_blocklist_version"`);
  return Number(row?.version ?? 0);
}

const signers = new Map<string, Promise<BlocklistSigner>>();
const signerOf = (seed: string) => {
  let found = signers.get(seed);
  if (!found) signers.set(seed, (found = createBlocklistSigner(seed)));
  return found;
};

/**
 * The blocklist signer: from Protection:Blocklist:SigningKey, or the seed generated at the first
 * start and kept in PostgreSQL (the first insert wins; every instance reads back the same row).
 */
export async function loadBlocklistSigner(em: EntityManager, configured: string | undefined): Promise<BlocklistSigner> {
  if (configured !== undefined) {
    try {
      decodeSigningSeed(configured);
    } catch {
      throw new ConfigError(`Invalid setting ${signingKeySetting}: it must be base64 of a 32-byte Ed25519 seed.`);
    }
    return signerOf(configured.trim());
  }
  await sql(
    em,
    `insert into "protection_blocklist_signing_key" ("id", "seed", "created_at") values (1, ?, ?) on conflict ("id") do nothing`,
    [generateSigningSeed().toString("base64"), new Date()],
  );
  const [row] = await sql<{ seed: string }>(em, `select "seed" from "protection_blocklist_signing_key" where "id" = 1`);
  return signerOf(row!.seed);
}

/** `{ key_id, public_key }` of the blocklist key, for the device config. */
export async function blocklistPublicKeyInfo(
  em: EntityManager,
  settings: { protection: { blocklist: { signingKey?: string | undefined } } },
): Promise<{ key_id: string; public_key: string }> {
  const signer = await loadBlocklistSigner(em, settings.protection.blocklist.signingKey);
  return { key_id: signer.keyId, public_key: signer.publicKey };
}

export interface CompileResult {
  compiled: boolean;
  version: number;
  entry_count: number;
  added_count: number;
  removed_count: number;
}

interface VersionRow {
  version: number;
  entry_count: number;
  list_sha256: string;
  created_at: Date;
  key_id: string;
  signature: string;
}

export type DeltaOutcome = BlocklistDeltaAnswer | "no_version" | "full_sync_required";

export interface BlocklistVersions {
  readonly signer: BlocklistSigner;
  /** Compiles now; waits for a compilation running elsewhere. */
  compile(): Promise<CompileResult>;
  /** Compiles unless another compilation runs (the worker's tick): undefined then. */
  compileIfIdle(): Promise<CompileResult | undefined>;
  version(): Promise<BlocklistVersionAnswer | undefined>;
  delta(fromVersion: number): Promise<DeltaOutcome>;
  full(): Promise<BlocklistFullAnswer | undefined>;
}

/** The first index of `list` (sorted) at or after `from` holding a domain not below `domain`. */
function lowerBound(list: readonly string[], domain: string, from: number): number {
  let lo = from;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]! < domain) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * `previous` with `removed` left out and `added` put in, all three sorted: each change is found by
 * binary search and the runs between are copied, so a million domains cost no string comparison
 * beyond the searches. Undefined when a change does not fit (an added domain already there, a
 * removed one missing): the caller then rebuilds from the database.
 */
export function applyChanges(previous: readonly string[], added: readonly string[], removed: readonly string[]): string[] | undefined {
  const out = new Array<string>(previous.length + added.length - removed.length);
  let k = 0;
  let from = 0;
  let i = 0;
  let j = 0;
  while (i < added.length || j < removed.length) {
    const adding = j >= removed.length || (i < added.length && added[i]! < removed[j]!);
    const domain = adding ? added[i++]! : removed[j++]!;
    const at = lowerBound(previous, domain, from);
    if (adding === (at < previous.length && previous[at] === domain)) return undefined;
    for (let p = from; p < at; p++) out[k++] = previous[p]!;
    if (adding) out[k++] = domain;
    from = adding ? at : at + 1;
  }
  for (let p = from; p < previous.length; p++) out[k++] = previous[p]!;
  return out;
}

export function createBlocklistVersions(deps: {
  db: { em(): EntityManager };
  uow: UnitOfWork;
  signer: BlocklistSigner;
  retainedVersions: number;
}): BlocklistVersions {
  const { signer, uow } = deps;
  /** The current version's sorted domains, as this process last saw them. */
  let listed: { version: number; domains: readonly string[] } | undefined;
  let fullAnswer: BlocklistFullAnswer | undefined;
  const deltas = new Map<string, BlocklistDeltaAnswer>();

  async function latest(em: EntityManager): Promise<VersionRow | undefined> {
    const [row] = await sql<VersionRow>(
      em,
      `select "version", "entry_count", "list_sha256", "created_at", "key_id", "signature"
         from "protection_blocklist_version" order by "version" desc limit 1`,
    );
    return row && { ...row, version: Number(row.version), entry_count: Number(row.entry_count), created_at: new Date(row.created_at) };
  }

  /** The domains of `version`, the current one in `em`'s view: cached, or read in the byte order of the answers. */
  async function domainsOf(em: EntityManager, version: number): Promise<readonly string[]> {
    if (version === 0) return [];
    if (listed?.version === version) return listed.domains;
    const rows = await sql<{ domain: string }>(em, `select "domain" from "protection_blocklist_domain" order by "domain"`);
    const domains = rows.map((r) => r.domain);
    listed = { version, domains };
    return domains;
  }

  async function run(wait: boolean): Promise<CompileResult | undefined> {
    let published: { version: number; domains: readonly string[] } | undefined;
    const result = await uow.run(async (tx) => {
      const { em } = tx;
      if (wait) await sql(em, `select pg_advisory_xact_lock(${COMPILE_LOCK})`);
      else {
        const [got] = await sql<{ locked: boolean }>(em, `select pg_try_advisory_xact_lock(${COMPILE_LOCK}) as "locked"`);
        if (!got?.locked) return undefined;
      }
      const previous = await latest(em);
      // The domains changed since the last compilation, taken from the log in this transaction
      // (rolled back with it on failure): each is added, removed, or back as it was.
      const changed = await sql<{ domain: string; listed: boolean; published: boolean }>(
        em,
        `with "taken" as (delete from "protection_blocklist_change" returning "domain")
         select t."domain",
                exists (select 1 from "protection_blocklist_entry" e where e."domain" = t."domain") as "listed",
                exists (select 1 from "protection_blocklist_domain" d where d."domain" = t."domain") as "published"
           from (select distinct "domain" from "taken") t`,
      );
      const added = changed
        .filter((c) => c.listed && !c.published)
        .map((c) => c.domain)
        .sort();
      const removed = changed
        .filter((c) => !c.listed && c.published)
        .map((c) => c.domain)
        .sort();
      const before = previous?.version ?? 0;
      if (added.length === 0 && removed.length === 0) {
        return { compiled: false, version: before, entry_count: previous?.entry_count ?? 0, added_count: 0, removed_count: 0 };
      }
      let previousDomains = await domainsOf(em, before);
      let domains = applyChanges(previousDomains, added, removed);
      if (!domains) {
        // This process's copy disagrees with the database: read the list again and diff it whole.
        listed = undefined;
        previousDomains = await domainsOf(em, before);
        const gone = new Set(removed);
        domains = [
          ...compileBlocklist({ version: before, domains: previousDomains }, [...previousDomains.filter((d) => !gone.has(d)), ...added])
            .domains,
        ];
      }
      const compiled = { version: before + 1, domains, added, removed, entry_count: domains.length, list_sha256: listSha256(domains) };
      const now = new Date();
      const answer = signVersionAnswer(signer, {
        version: compiled.version,
        entry_count: compiled.entry_count,
        updated_at: timestampText(now),
        list_sha256: compiled.list_sha256,
      });
      await sql(
        em,
        `insert into "protection_blocklist_version"
           ("version", "entry_count", "list_sha256", "added", "removed", "created_at", "key_id", "signature")
           values (?, ?, ?, ?::text[], ?::text[], ?, ?, ?)`,
        [
          compiled.version,
          compiled.entry_count,
          compiled.list_sha256,
          pgTextArray(compiled.added),
          pgTextArray(compiled.removed),
          now,
          answer.key_id,
          answer.signature,
        ],
      );
      if (compiled.removed.length > 0) {
        await sql(em, `delete from "protection_blocklist_domain" where "domain" = any(?::text[])`, [pgTextArray(compiled.removed)]);
      }
      if (compiled.added.length > 0) {
        await sql(em, `insert into "protection_blocklist_domain" ("domain") select unnest(?::text[])`, [pgTextArray(compiled.added)]);
      }
      await sql(em, `delete from "protection_blocklist_version" where "version" <= ?`, [compiled.version - deps.retainedVersions]);
      tx.record(BlocklistCompiledSchema, {
        version: compiled.version,
        entryCount: compiled.entry_count,
        addedCount: compiled.added.length,
        removedCount: compiled.removed.length,
        listSha256: compiled.list_sha256,
      });
      published = { version: compiled.version, domains: compiled.domains };
      return {
        compiled: true,
        version: compiled.version,
        entry_count: compiled.entry_count,
        added_count: compiled.added.length,
        removed_count: compiled.removed.length,
      };
    });
    if (published) listed = published;
    return result;
  }

  /** Reads from one snapshot: a compilation committing meanwhile shows entirely or not at all. */
  const snapshot = <T>(work: (em: EntityManager) => Promise<T>) =>
    deps.db.em().transactional(work, { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true });

  return {
    signer,
    compile: async () => (await run(true))!,
    compileIfIdle: () => run(false),

    async version() {
      const row = await latest(deps.db.em());
      if (!row) return undefined;
      const unsigned = {
        version: row.version,
        entry_count: row.entry_count,
        updated_at: timestampText(row.created_at),
        list_sha256: row.list_sha256,
      };
      // Signed at compilation; a key configured since then signs it anew.
      if (row.key_id === signer.keyId) return { ...unsigned, key_id: row.key_id, signature: row.signature };
      return signVersionAnswer(signer, unsigned);
    },

    async delta(fromVersion) {
      return snapshot(async (em) => {
        const current = await latest(em);
        if (!current) return "no_version" as const;
        const plan = planDelta(fromVersion, current.version, deps.retainedVersions);
        if (plan.kind === "full_sync_required") return "full_sync_required" as const;
        const key = `${fromVersion}:${current.version}:${signer.keyId}`;
        const cached = deltas.get(key);
        if (cached) {
          deltas.delete(key);
          deltas.set(key, cached);
          return cached;
        }
        let changes = { added: [] as string[], removed: [] as string[] };
        if (plan.kind === "delta") {
          const steps = await sql<{ added: string[]; removed: string[] }>(
            em,
            `select "added", "removed" from "protection_blocklist_version" where "version" > ? and "version" <= ? order by "version"`,
            [fromVersion, current.version],
          );
          // Pruned versions (RetainedVersions lowered, then raised): the delta cannot be built.
          if (steps.length !== current.version - fromVersion) return "full_sync_required" as const;
          changes = netChanges(steps);
        }
        const answer = signDeltaAnswer(signer, {
          from_version: fromVersion,
          to_version: current.version,
          added: changes.added,
          removed: changes.removed,
          entry_count: current.entry_count,
          list_sha256: current.list_sha256,
        });
        deltas.set(key, answer);
        if (deltas.size > DELTA_CACHE_SIZE) deltas.delete(deltas.keys().next().value!);
        return answer;
      });
    },

    async full() {
      return snapshot(async (em) => {
        const current = await latest(em);
        if (!current) return undefined;
        if (fullAnswer?.version === current.version && fullAnswer.key_id === signer.keyId) return fullAnswer;
        const domains = await domainsOf(em, current.version);
        fullAnswer = signFullAnswer(signer, {
          version: current.version,
          entry_count: current.entry_count,
          list_sha256: current.list_sha256,
          domains: [...domains],
        });
        return fullAnswer;
      });
    },
  };
}
