// `npm run bench:blocklist`: the blocklist library on 1,000,000 domains with 1,000 changes (500
// added, 500 removed): the compilation (diff, list_sha256), the signatures of the version, the
// delta and the full answers, and a delta from 100 versions back. In one process, no database;
// the target is < 1 s for each of diff, list_sha256 and signature. A benchmark, not a test.
import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import {
  compileBlocklist,
  createBlocklistSigner,
  diffSorted,
  listSha256,
  generateSigningSeed,
  netChanges,
  signDeltaAnswer,
  signFullAnswer,
  signVersionAnswer,
  sortDomains,
} from "../services/protection/blocklist/index.js";
import { seededRandom } from "../test/support/seeded-random.js";

const quick = process.argv.includes("--quick");
const size = quick ? 100_000 : 1_000_000;
const changes = 1_000;
const rounds = quick ? 1 : 5;
const random = seededRandom(42);
const domain = () => `${Math.floor(random() * 2 ** 48).toString(36)}-casino.example`;

// Flat strings laid out in memory in list order, as PostgreSQL's driver builds them from rows read
// with ORDER BY domain COLLATE "C" (concatenated strings would cost a flattening each, and strings
// scattered by an in-memory sort a cache miss each).
const flat = (domains: string[]) => Buffer.from(domains.join("\n")).toString("latin1").split("\n");
const previous = flat(sortDomains(Array.from({ length: size }, domain)) as string[]);
const removedSet = new Set<string>();
while (removedSet.size < changes / 2) removedSet.add(previous[Math.floor(random() * previous.length)]!);
// The current entries as PostgreSQL hands them over with ORDER BY domain COLLATE "C".
const current = flat(
  sortDomains([...previous.filter((d) => !removedSet.has(d)), ...Array.from({ length: changes / 2 }, domain)]) as string[],
);
const signer = await createBlocklistSigner(generateSigningSeed());

function time<T>(label: string, work: () => T): T {
  const figures: number[] = [];
  let result!: T;
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    result = work();
    figures.push(performance.now() - start);
  }
  figures.sort((a, b) => a - b);
  console.log(
    `${label.padEnd(58)} median ${figures[Math.floor(figures.length / 2)]!.toFixed(1).padStart(7)} ms  (${figures.map((f) => f.toFixed(0)).join(", ")})`,
  );
  return result;
}

console.log(
  `${cpus().length} × ${cpus()[0]?.model}, Node ${process.version}; ${previous.length.toLocaleString("en")} domains → ${current.length.toLocaleString("en")}, ${changes} changes`,
);
const compiled = time("compileBlocklist (sortedness check, diff, list_sha256)", () =>
  compileBlocklist({ version: 41, domains: previous }, current),
);
time("  diff alone", () => diffSorted(previous, current));
time("  list_sha256 alone", () => listSha256(current));
console.log(`  added ${compiled.added.length}, removed ${compiled.removed.length}, version ${compiled.version}`);
time("sign the version answer", () =>
  signVersionAnswer(signer, {
    version: compiled.version,
    entry_count: compiled.entry_count,
    updated_at: new Date().toISOString(),
    list_sha256: compiled.list_sha256,
  }),
);
time("sign the delta from the previous version", () =>
  signDeltaAnswer(signer, {
    from_version: 41,
    to_version: 42,
    added: compiled.added,
    removed: compiled.removed,
    entry_count: compiled.entry_count,
    list_sha256: compiled.list_sha256,
  }),
);
const steps = Array.from({ length: 100 }, () => ({ added: compiled.added, removed: compiled.removed }));
time("net change over 100 versions of 1,000 changes each", () => netChanges(steps));
time(`sign the full answer (${compiled.entry_count.toLocaleString("en")} domains)`, () =>
  signFullAnswer(signer, {
    version: compiled.version,
    entry_count: compiled.entry_count,
    list_sha256: compiled.list_sha256,
    domains: compiled.domains as string[],
  }),
);
