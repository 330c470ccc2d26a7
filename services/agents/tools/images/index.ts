// analyze_image and describe_image: the image (a workspace file, or an http(s) URL fetched through
// the SSRF guard) goes to the agent's provider and model as an `image_url` part holding a data URL,
// with the question as a text part; the answer is the model's text. The provider never fetches a
// URL itself, so the guard sees every address.
import { open, stat } from "node:fs/promises";
import { type ToolContext, type ToolSpec, ToolError } from "../tool.js";
import { deadline, hostResolverOf, type WebSettings } from "../web/index.js";
import { guardedGet } from "../web/ssrf.js";

/** Largest image sent, in bytes (providers take about 20 MB). */
export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
/** A provider answer about an image may take this long unless the envelope's timeoutMs says otherwise. */
export const IMAGE_TIMEOUT_MS = 120_000;

const SIGNATURES: [string, (b: Buffer) => boolean][] = [
  ["image/png", (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))],
  ["image/jpeg", (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff],
  ["image/gif", (b) => b.subarray(0, 4).toString("latin1") === "GIF8"],
  ["image/webp", (b) => b.subarray(0, 4).toString("latin1") === "RIFF" && b.subarray(8, 12).toString("latin1") === "WEBP"],
  ["image/bmp", (b) => b.subarray(0, 2).toString("latin1") === "BM"],
];

/** The image's media type from its first bytes, or an Error. */
export function imageType(bytes: Buffer, what: string): string {
  const found = SIGNATURES.find(([, test]) => test(bytes));
  if (!found) throw new ToolError(`${what} is not a PNG, JPEG, GIF, WebP or BMP image`);
  return found[0];
}

async function readFileImage(ctx: ToolContext, path: string): Promise<Buffer> {
  const absolute = ctx.services.workspace.resolve(path);
  let size: number;
  try {
    const info = await stat(absolute);
    if (!info.isFile()) throw new ToolError(`'${path}' is not a file`);
    size = info.size;
  } catch (error) {
    if (error instanceof ToolError) throw error;
    throw new ToolError(`'${path}' does not exist`);
  }
  if (size > MAX_IMAGE_BYTES) throw new ToolError(`'${path}' is ${size} bytes; images are sent up to ${MAX_IMAGE_BYTES} bytes`);
  const handle = await open(absolute, "r");
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

async function readUrlImage(ctx: ToolContext, url: string): Promise<Buffer> {
  const response = await guardedGet(url, {
    settings: (ctx.settings as unknown as WebSettings).web,
    signal: deadline(ctx),
    maxBytes: MAX_IMAGE_BYTES + 1,
    resolve: hostResolverOf(ctx),
    headers: { accept: "image/*" },
  });
  if (response.status < 200 || response.status >= 300) throw new ToolError(`${response.url} answered HTTP ${response.status}`);
  if (response.body.length > MAX_IMAGE_BYTES) throw new ToolError(`${response.url} is over ${MAX_IMAGE_BYTES} bytes`);
  return response.body;
}

/** The image at `path` (a URL with a scheme, else a workspace path) as a data URL. */
export async function imageDataUrl(ctx: ToolContext, path: string): Promise<string> {
  const given = path.trim();
  if (given === "") throw new ToolError("path must name an image file or URL");
  const isUrl = /^[a-z][a-z0-9+.-]+:/i.test(given);
  const bytes = isUrl ? await readUrlImage(ctx, given) : await readFileImage(ctx, given);
  return `data:${imageType(bytes, `'${given}'`)};base64,${bytes.toString("base64")}`;
}

async function ask(ctx: ToolContext, path: string, prompt: string, detail?: string): Promise<string> {
  if (!ctx.services.chat) throw new ToolError("image tools need the agent's provider, which is not available in this process");
  const url = await imageDataUrl(ctx, path);
  const messages = [
    {
      role: "user",
      content: [
        { type: "text", text: prompt },
        { type: "image_url", image_url: { url, ...(detail ? { detail } : {}) } },
      ],
    },
  ];
  let answer: string;
  try {
    answer = await ctx.services.chat(ctx.agentId, { messages, signal: deadline(ctx, IMAGE_TIMEOUT_MS) });
  } catch (error) {
    throw new ToolError(`the provider could not answer about the image: ${(error as Error).message}`);
  }
  if (answer.trim() === "") throw new ToolError("the provider answered nothing about the image");
  return answer;
}

const path = { type: "string" as const, description: "An image file in the workspace, or an http(s) URL." };

export const imageTools: ToolSpec[] = [
  {
    name: "analyze_image",
    description: "Ask the agent's model about an image (PNG, JPEG, GIF, WebP, BMP): a file or a URL.",
    tier: "A",
    parameters: {
      type: "object",
      properties: { path, prompt: { type: "string", description: "What to ask about the image." } },
      required: ["path"],
    },
    async run(args, ctx) {
      const prompt =
        typeof args.prompt === "string" && args.prompt.trim() !== ""
          ? args.prompt
          : "Analyze this image: what does it show? Include any text in it.";
      return ask(ctx, String(args.path), prompt);
    },
  },
  {
    name: "describe_image",
    description: "Describe an image (a file or a URL) with the agent's model.",
    tier: "A",
    parameters: {
      type: "object",
      properties: { path, detail: { type: "string", enum: ["low", "high"], default: "high", description: "low or high." } },
      required: ["path"],
    },
    async run(args, ctx) {
      const detail = String(args.detail ?? "high");
      if (detail !== "low" && detail !== "high") throw new ToolError("detail must be low or high");
      return ask(ctx, String(args.path), "Describe this image in detail.", detail);
    },
  },
];
