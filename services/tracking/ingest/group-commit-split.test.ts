// How a shared transaction that fails is split: in halves, in arrival order, until the record the
// database refuses stands alone. The writer here is a stand-in for recordChunk that refuses any
// chunk holding a marked record, so what is asserted is the splitting, not PostgreSQL.
import test from "ava";
import type { CheckedObservation } from "../domain/observation-types.js";
import type { ChunkContext, ChunkItem, ChunkOutcome } from "./record-chunk.js";
import { GroupCommit } from "./recorder.js";

const observation = (n: number) => ({ n }) as unknown as CheckedObservation;
const numberOf = (item: ChunkItem) => (item.observation as unknown as { n: number }).n;

function harness(refused: Set<number>) {
  const chunks: number[][] = [];
  let releaseFirst!: () => void;
  const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
  const run = async (items: ChunkItem[]): Promise<Map<number, ChunkOutcome>> => {
    const numbers = items.map(numberOf);
    chunks.push(numbers);
    if (chunks.length <= 2) await firstHeld; // the two chunks in flight hold until every record waits
    if (numbers.some((n) => refused.has(n))) throw new Error(`refused ${numbers.filter((n) => refused.has(n))}`);
    return new Map(items.map((item) => [item.index, { kind: "duplicate" } as ChunkOutcome]));
  };
  const group = new GroupCommit(run, {} as ChunkContext);
  return { chunks, releaseFirst, submit: (n: number) => group.submit(observation(n)) };
}

test("a refused record in a shared chunk fails alone; the others are still written together", async (t) => {
  const { chunks, releaseFirst, submit } = harness(new Set([7]));
  const results = Array.from({ length: 20 }, (_, n) =>
    submit(n).then(
      () => "ok",
      (err: Error) => err.message,
    ),
  );
  releaseFirst();
  const outcomes = await Promise.all(results);

  t.deepEqual(
    outcomes.map((o, n) => [n, o]).filter(([, o]) => o !== "ok"),
    [[7, "refused 7"]],
  );
  // Records 0 and 1 went alone (nothing was in flight); 2..19 waited and formed one chunk, which
  // failed and was halved until 7 stood alone.
  t.deepEqual(chunks.slice(0, 3), [[0], [1], [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]]);
  const written = chunks.filter((c) => !c.includes(7));
  t.deepEqual(
    written
      .slice(2)
      .flat()
      .sort((a, b) => a - b),
    [2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
  );
  // Only the refused record's last partner can end up alone.
  t.true(written.slice(2).filter((c) => c.length === 1).length <= 1, `good records shared chunks: ${JSON.stringify(chunks)}`);
  t.true(chunks.length <= 3 + 2 * Math.ceil(Math.log2(18)), `splitting took ${chunks.length} chunks`);
});

test("two refused records in one chunk each fail alone", async (t) => {
  const { releaseFirst, submit } = harness(new Set([3, 12]));
  const results = Array.from({ length: 16 }, (_, n) =>
    submit(n).then(
      () => "ok",
      () => "refused",
    ),
  );
  releaseFirst();
  const outcomes = await Promise.all(results);
  t.deepEqual(
    outcomes.flatMap((o, n) => (o === "refused" ? [n] : [])),
    [3, 12],
  );
});
