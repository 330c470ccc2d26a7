import test from "ava";
import { createPasswordHasher } from "./password-hasher.js";

test("argon2id hashes in worker threads: the right password verifies, another does not", async (t) => {
  const hasher = createPasswordHasher({ memoryKiB: 64, iterations: 1, threads: 2 });
  t.teardown(() => hasher.close());
  const hashes = await Promise.all(["correct horse battery", "correct horse battery"].map((p) => hasher.hash(p)));
  t.regex(hashes[0]!, /^\$argon2id\$v=19\$m=64,t=1,p=1\$/);
  t.not(hashes[0], hashes[1], "salted");
  t.true(await hasher.verify(hashes[0]!, "correct horse battery"));
  t.false(await hasher.verify(hashes[1]!, "Correct horse battery"));
  await t.notThrowsAsync(hasher.verifyNothing("anything at all"));
});

test("a closed hasher refuses work instead of waiting", async (t) => {
  const hasher = createPasswordHasher({ memoryKiB: 64, iterations: 1, threads: 1 });
  await hasher.hash("warm up the pool");
  await hasher.close();
  await t.throwsAsync(hasher.hash("too late"), { message: /closed/ });
});
