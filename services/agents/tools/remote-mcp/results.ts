// A remote tools/call answer as the text the model reads: the text parts joined by newlines, other
// parts described in one line (`[image image/png, 1234 bytes]`), an embedded text resource as its
// text; without content, the structured content (or an old server's `toolResult`) as JSON.
// `isError: true` becomes a ToolError, so the dispatcher answers `Error: <the server's text>`.
import { ToolError } from "../tool.js";

interface Part {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; mimeType?: string; text?: string; blob?: string };
}

/** Bytes of a base64 payload, without decoding it. */
function base64Bytes(data: string | undefined): number {
  if (!data) return 0;
  const clean = data.replace(/\s/g, "");
  const padding = clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((clean.length * 3) / 4) - padding);
}

function partText(part: Part): string {
  switch (part.type) {
    case "text":
      return part.text ?? "";
    case "image":
    case "audio":
      return `[${part.type} ${part.mimeType ?? "unknown type"}, ${base64Bytes(part.data)} bytes]`;
    case "resource_link":
      return `[resource link ${part.uri ?? ""}${part.name ? ` (${part.name})` : ""}]`;
    case "resource": {
      const resource = part.resource ?? {};
      if (typeof resource.text === "string") return resource.text;
      return `[resource ${resource.uri ?? ""} ${resource.mimeType ?? "unknown type"}, ${base64Bytes(resource.blob)} bytes]`;
    }
    default:
      return `[${part.type} content]`;
  }
}

/** The text of a tools/call result; throws ToolError when the server marked it an error. */
export function resultText(result: Record<string, unknown>): string {
  const content = Array.isArray(result.content) ? (result.content as Part[]) : [];
  let text = content.map(partText).join("\n");
  if (content.length === 0) {
    if (result.structuredContent !== undefined) text = JSON.stringify(result.structuredContent);
    else if (result.toolResult !== undefined) text = JSON.stringify(result.toolResult);
  }
  if (result.isError === true) throw new ToolError(text || "the remote tool reported an error without a message");
  return text;
}
