// splitMessage: parts within the limit, in order, that join back to the text exactly; cuts after a
// newline, else after a space, else at the limit (never inside a surrogate pair).
import test from "ava";
import { splitMessage } from "./split-message.js";

test("a text within the limit is one part, the empty text too", (t) => {
  t.deepEqual(splitMessage("hello", 5), ["hello"]);
  t.deepEqual(splitMessage("", 4096), [""]);
});

test("a cut prefers the last newline within the limit, then the last space, then the limit", (t) => {
  t.deepEqual(splitMessage("ab cd\nef gh", 8), ["ab cd\n", "ef gh"]);
  t.deepEqual(splitMessage("ab cd ef gh", 8), ["ab cd ", "ef gh"]);
  t.deepEqual(splitMessage("abcdefghij", 4), ["abcd", "efgh", "ij"]);
});

test("a surrogate pair at the limit moves whole to the next part", (t) => {
  const text = `abc\u{1F600}def`;
  const parts = splitMessage(text, 4);
  t.deepEqual(parts, ["abc", "\u{1F600}de", "f"]);
  t.is(parts.join(""), text);
});

test("long mixed texts: every part within the limit, joined back exactly, in order", (t) => {
  let seed = 7;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const alphabet = ["a", "b", " ", "\n", "é", "\u{1F600}", "xyz"];
  for (const limit of [2, 3, 10, 4096]) {
    for (let round = 0; round < 20; round++) {
      let text = "";
      const length = Math.floor(random() * limit * 5);
      while (text.length < length) text += alphabet[Math.floor(random() * alphabet.length)];
      const parts = splitMessage(text, limit);
      t.is(parts.join(""), text);
      for (const part of parts) t.true((part.length <= limit && part.length > 0) || text === "");
    }
  }
});

test("a limit below 2 is refused", (t) => {
  t.throws(() => splitMessage("abc", 1), { instanceOf: RangeError });
});
