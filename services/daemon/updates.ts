// Release checks against an npm registry (`Updates:PackageFeedUrl`, package `Updates:PackageId`):
// the abbreviated metadata document, candidates above the running version that are not
// deprecated (pre-releases only with `Updates:PreRelease`), the highest by semver precedence.
export interface UpdateCheck {
  packageId: string;
  currentVersion: string;
  latestVersion: string;
  updateAvailable: boolean;
}

export class FeedError extends Error {}

const SEMVER = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z.-]+)?$/;

interface Parsed {
  core: [number, number, number];
  pre: string[];
}

function parse(version: string): Parsed | undefined {
  const m = SEMVER.exec(version.trim());
  if (!m) return undefined;
  return { core: [Number(m[1]), Number(m[2]), Number(m[3])], pre: m[4] ? m[4].split(".") : [] };
}

/** Semver precedence: negative when a < b. Pre-release identifiers compare numerically when both are numbers. */
export function compareVersions(a: string, b: string): number {
  const x = parse(a);
  const y = parse(b);
  if (!x || !y) throw new Error(`not a semantic version: ${!x ? a : b}`);
  for (let i = 0; i < 3; i++) if (x.core[i] !== y.core[i]) return x.core[i]! - y.core[i]!;
  if (x.pre.length === 0 || y.pre.length === 0) return y.pre.length - x.pre.length;
  for (let i = 0; i < Math.min(x.pre.length, y.pre.length); i++) {
    const p = x.pre[i]!;
    const q = y.pre[i]!;
    if (p === q) continue;
    const pn = /^\d+$/.test(p);
    const qn = /^\d+$/.test(q);
    if (pn && qn) return Number(p) - Number(q);
    if (pn !== qn) return pn ? -1 : 1;
    return p < q ? -1 : 1;
  }
  return x.pre.length - y.pre.length;
}

/** The highest version above `current` the document offers, or undefined. */
export function latestCandidate(document: unknown, current: string, preRelease: boolean): string | undefined {
  const versions = (document as { versions?: Record<string, { deprecated?: unknown }> } | null)?.versions;
  if (!versions || typeof versions !== "object") throw new FeedError("the answer holds no versions");
  let best: string | undefined;
  for (const [version, meta] of Object.entries(versions)) {
    const parsed = parse(version);
    if (!parsed || meta?.deprecated) continue;
    if (parsed.pre.length > 0 && !preRelease) continue;
    if (compareVersions(version, current) <= 0) continue;
    if (!best || compareVersions(version, best) > 0) best = version;
  }
  return best;
}

/** `{feed}/{id}`, a scoped id's slash written `%2f`. */
export function feedUrl(feed: string, packageId: string): string {
  return `${feed.replace(/\/+$/, "")}/${packageId.replace("/", "%2f")}`;
}

export async function checkForUpdate(options: {
  feed: string;
  packageId: string;
  currentVersion: string;
  preRelease: boolean;
  token?: string;
  signal?: AbortSignal;
}): Promise<UpdateCheck> {
  const url = feedUrl(options.feed, options.packageId);
  let document: unknown;
  try {
    const res = await fetch(url, {
      headers: {
        accept: "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*",
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      },
      signal: options.signal ?? AbortSignal.timeout(30_000),
    });
    if (!res.ok) throw new FeedError(`the package feed ${url} answered ${res.status}`);
    document = await res.json();
  } catch (error) {
    if (error instanceof FeedError) throw error;
    throw new FeedError(`the package feed ${url} is unreachable or answered something that is not JSON`);
  }
  let latest: string | undefined;
  try {
    latest = latestCandidate(document, options.currentVersion, options.preRelease);
  } catch (error) {
    throw new FeedError(`the package feed ${url} answered an invalid document (${(error as Error).message})`);
  }
  return {
    packageId: options.packageId,
    currentVersion: options.currentVersion,
    latestVersion: latest ?? options.currentVersion,
    updateAvailable: latest !== undefined,
  };
}
