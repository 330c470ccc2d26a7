// Blocklist versions as data: a compilation compares the last version's domains with the current
// entries; a delta is the net change from a retained version to the current one. Domains are kept
// sorted by UTF-16 code units (= bytes for the ASCII of normalised domains), the order of every
// list an answer carries: read them from PostgreSQL with `ORDER BY domain COLLATE "C"`.
import { createHash } from "node:crypto";

export interface DomainChanges {
  /** Domains in the later list and not in the earlier, sorted. */
  added: string[];
  /** Domains in the earlier list and not in the later, sorted. */
  removed: string[];
}

export interface CompiledBlocklist extends DomainChanges {
  /** False when the domains are those of the previous version: no new version is published. */
  changed: boolean;
  /** The previous version + 1 when changed, else the previous version (0 before the first). */
  version: number;
  /** The sorted, distinct domains of `version`. */
  domains: readonly string[];
  entry_count: number;
  list_sha256: string;
}

/** True when `domains` is sorted by code units with no repeats. */
export function isSortedDistinct(domains: readonly string[]): boolean {
  for (let i = 1; i < domains.length; i++) if (!(domains[i - 1]! < domains[i]!)) return false;
  return true;
}

/** `domains` sorted by code units without repeats; an already sorted, distinct array is returned as is (one pass). */
export function sortDomains(domains: Iterable<string>): readonly string[] {
  if (Array.isArray(domains) && isSortedDistinct(domains)) return domains;
  const sorted = [...domains].sort();
  let kept = 0;
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[kept - 1]) sorted[kept++] = sorted[i]!;
  sorted.length = kept;
  return sorted;
}

/** Hashed in slices: one `update` per domain would cost more than the hashing. */
const hashSlice = 8192;

/** Hex SHA-256 of the sorted domains, each followed by `\n` (the empty list hashes the empty string). */
export function listSha256(sortedDomains: readonly string[]): string {
  const hash = createHash("sha256");
  for (let start = 0; start < sortedDomains.length; start += hashSlice) {
    const slice = sortedDomains.slice(start, start + hashSlice);
    hash.update(`${slice.join("\n")}\n`, "utf8");
  }
  return hash.digest("hex");
}

/** The change from one sorted, distinct list to another, in one merge pass. */
export function diffSorted(from: readonly string[], to: readonly string[]): DomainChanges {
  const added: string[] = [];
  const removed: string[] = [];
  let i = 0;
  let j = 0;
  while (i < from.length && j < to.length) {
    const a = from[i]!;
    const b = to[j]!;
    if (a === b) {
      i++;
      j++;
    } else if (a < b) {
      removed.push(a);
      i++;
    } else {
      added.push(b);
      j++;
    }
  }
  while (i < from.length) removed.push(from[i++]!);
  while (j < to.length) added.push(to[j++]!);
  return { added, removed };
}

/**
 * One compilation: the previous version (undefined or version 0 before the first: the empty
 * list) against the domains the entries hold now (any order, repeats allowed).
 */
export function compileBlocklist(
  previous: { version: number; domains: readonly string[] } | undefined,
  current: Iterable<string>,
): CompiledBlocklist {
  const before = previous?.domains ?? [];
  if (!isSortedDistinct(before)) throw new RangeError("the previous version's domains must be sorted and distinct");
  const domains = sortDomains(current);
  const { added, removed } = diffSorted(before, domains);
  const changed = added.length > 0 || removed.length > 0;
  const version = (previous?.version ?? 0) + (changed ? 1 : 0);
  return { changed, version, domains, added, removed, entry_count: domains.length, list_sha256: listSha256(domains) };
}

/**
 * The net change across consecutive versions' changes, oldest first (versions N+1 … current for
 * a delta from N): a domain added then removed cancels out, one removed then added back too.
 * Each step must apply to the list the previous steps produced.
 */
export function netChanges(steps: readonly DomainChanges[]): DomainChanges {
  // For each domain touched: was it in the list before the first step, and is it after the last?
  const touched = new Map<string, { before: boolean; after: boolean }>();
  for (const step of steps) {
    for (const domain of step.added) {
      const seen = touched.get(domain);
      if (seen) seen.after = true;
      else touched.set(domain, { before: false, after: true });
    }
    for (const domain of step.removed) {
      const seen = touched.get(domain);
      if (seen) seen.after = false;
      else touched.set(domain, { before: true, after: false });
    }
  }
  const added: string[] = [];
  const removed: string[] = [];
  for (const [domain, { before, after }] of touched) {
    if (after && !before) added.push(domain);
    else if (before && !after) removed.push(domain);
  }
  return { added: added.sort(), removed: removed.sort() };
}

export type DeltaPlan = { kind: "empty" } | { kind: "delta" } | { kind: "full_sync_required" };

/**
 * What `GET /v1/blocklist/delta?from_version=N` answers, given the current version (≥ 1) and how
 * many versions are retained: N = current an empty delta; N above current, or more than
 * `retainedVersions` behind, 409 FULL_SYNC_REQUIRED; else the net change from N (0 = the empty list).
 * N must already be checked as a non-negative integer (else 400).
 */
export function planDelta(fromVersion: number, currentVersion: number, retainedVersions: number): DeltaPlan {
  if (!Number.isSafeInteger(fromVersion) || fromVersion < 0) throw new RangeError("from_version must be a non-negative integer");
  if (fromVersion === currentVersion) return { kind: "empty" };
  if (fromVersion > currentVersion || currentVersion - fromVersion > retainedVersions) return { kind: "full_sync_required" };
  return { kind: "delta" };
}
