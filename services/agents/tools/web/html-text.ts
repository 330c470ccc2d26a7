// HTML as web_fetch answers it: the text only. Tags dropped, entities decoded, script, style and
// other non-content elements skipped, block elements on their own lines, whitespace collapsed.
import { Parser } from "htmlparser2";

const SKIPPED = new Set(["script", "style", "noscript", "template", "head", "svg", "iframe", "object", "canvas"]);
const BLOCKS = new Set([
  "p",
  "div",
  "br",
  "li",
  "ul",
  "ol",
  "tr",
  "table",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "section",
  "article",
  "header",
  "footer",
  "nav",
  "main",
  "aside",
  "blockquote",
  "pre",
  "hr",
  "dd",
  "dt",
  "dl",
  "figure",
  "figcaption",
  "form",
  "title",
]);

export function htmlToText(html: string): string {
  let out = "";
  let skipping = 0;
  let title = "";
  let inTitle = false;
  const parser = new Parser(
    {
      onopentag(name) {
        if (name === "title") inTitle = true;
        if (SKIPPED.has(name)) skipping++;
        else if (skipping === 0 && BLOCKS.has(name)) out += "\n";
      },
      ontext(text) {
        if (inTitle) title += text;
        if (skipping === 0) out += text;
      },
      onclosetag(name) {
        if (name === "title") inTitle = false;
        if (SKIPPED.has(name)) skipping = Math.max(0, skipping - 1);
        else if (skipping === 0 && BLOCKS.has(name)) out += "\n";
      },
    },
    { decodeEntities: true, lowerCaseTags: true },
  );
  parser.write(html);
  parser.end();
  const body = out
    .split("\n")
    .map((line) => line.replace(/[\s\u00a0]+/g, " ").trim())
    .filter((line) => line !== "")
    .join("\n");
  const heading = title.replace(/\s+/g, " ").trim();
  return heading && !body.startsWith(heading) ? `${heading}\n\n${body}` : body;
}
