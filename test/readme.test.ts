// The README's promises that code can check: the quick-start commands and the configuration table.
import test from "ava";
import { readFileSync } from "node:fs";
import { settingsMarkdown } from "../services/mesh-config.js";

const readme = readFileSync("README.md", "utf8");

test("the README opens with the two quick-start commands", (t) => {
  const firstBlock = readme.slice(0, readme.indexOf("\n## ", readme.indexOf("```")));
  t.true(firstBlock.includes("npm install && npm start"));
  t.true(firstBlock.includes("npm test"));
});

test("the README's configuration table is exactly the settings the loader knows", (t) => {
  t.true(readme.includes(settingsMarkdown()), "regenerate the table with `npm run settings-table`");
});
