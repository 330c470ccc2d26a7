// Clipboard and screenshot tools with fake helper programs on a PATH of the test's own (the host
// has none): which program is chosen, what it is given, and the Errors naming what is missing.
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import test from "ava";
import { testToolContext, toolNamed } from "../testing.js";
import { PolicyBlock, ToolError } from "../tool.js";
import { desktopTools } from "./index.js";

const tool = (name: string) => toolNamed(desktopTools, name);

/** A ToolContext whose PATH is a fresh directory holding these scripts, with these display variables. */
async function withPrograms(scripts: Record<string, string>, display: Record<string, string> = {}) {
  const ctx = await testToolContext();
  const bin = join(ctx.settings.dataDir, "bin");
  await mkdir(bin, { recursive: true });
  for (const [name, body] of Object.entries(scripts)) {
    await writeFile(join(bin, name), `#!/bin/sh\n${body}\n`);
    await chmod(join(bin, name), 0o755);
  }
  ctx.services.environment = { PATH: bin, HOME: ctx.settings.dataDir, ...display };
  return { ctx, bin };
}

test("without any clipboard program both tools answer an Error naming wl-clipboard, xclip and xsel", async (t) => {
  const { ctx } = await withPrograms({});
  for (const [name, args] of [
    ["read_clipboard", {}],
    ["write_clipboard", { text: "x" }],
  ] as const) {
    await t.throwsAsync(tool(name).run(args, ctx), {
      instanceOf: ToolError,
      message: "no clipboard program: install wl-clipboard, xclip or xsel",
    });
  }
});

test("xclip under X11: write then read the clipboard selection", async (t) => {
  const { ctx, bin } = await withPrograms({}, { DISPLAY: ":99" });
  const store = join(bin, "clipboard.txt");
  const log = join(bin, "args.log");
  await writeFile(
    join(bin, "xclip"),
    `#!/bin/sh\necho "$@" >> ${log}\nif [ "$3" = "-o" ]; then /bin/cat ${store}; else /bin/cat > ${store}; fi\n`,
  );
  await chmod(join(bin, "xclip"), 0o755);
  t.is(await tool("write_clipboard").run({ text: "copied — text\nline 2" }, ctx), "Copied 20 characters to the clipboard.");
  t.is(await readFile(store, "utf8"), "copied — text\nline 2");
  t.is(await tool("read_clipboard").run({}, ctx), "copied — text\nline 2");
  t.is(await readFile(log, "utf8"), "-selection clipboard -i\n-selection clipboard -o\n");
});

test("wl-clipboard is used under Wayland; xsel when it is the one installed", async (t) => {
  const wayland = await withPrograms(
    { "wl-paste": 'echo -n "from wayland $1"', "wl-copy": "/bin/cat > /dev/null", xclip: "exit 9" },
    { WAYLAND_DISPLAY: "wayland-0", DISPLAY: ":0" },
  );
  t.is(await tool("read_clipboard").run({}, wayland.ctx), "from wayland --no-newline");
  const xsel = await withPrograms({ xsel: 'echo -n "from xsel $1 $2"' }, { DISPLAY: ":0" });
  t.is(await tool("read_clipboard").run({}, xsel.ctx), "from xsel --clipboard --output");
});

test("a clipboard program without a display, or failing, is an Error saying so", async (t) => {
  const noDisplay = await withPrograms({ xclip: "exit 0" });
  await t.throwsAsync(tool("read_clipboard").run({}, noDisplay.ctx), {
    instanceOf: ToolError,
    message: "no display for the clipboard: DISPLAY is not set (xclip installed)",
  });
  const failing = await withPrograms({ xclip: 'echo "Error: Can\'t open display" >&2; exit 1' }, { DISPLAY: ":5" });
  await t.throwsAsync(tool("read_clipboard").run({}, failing.ctx), {
    instanceOf: ToolError,
    message: /xclip failed \(exit 1\): Error: Can't open display/,
  });
});

test("capture_screenshot without a program answers an Error naming the programs", async (t) => {
  const { ctx } = await withPrograms({}, { DISPLAY: ":0" });
  await t.throwsAsync(tool("capture_screenshot").run({}, ctx), {
    instanceOf: ToolError,
    message: "no screenshot program: install grim, maim, scrot, import, gnome-screenshot",
  });
  await t.throwsAsync(tool("capture_screenshot").run({ target: "Firefox" }, ctx), {
    instanceOf: ToolError,
    message: "capturing a window by title needs xdotool and ImageMagick (import) or maim",
  });
  const noDisplay = await withPrograms({ scrot: "exit 0" });
  await t.throwsAsync(tool("capture_screenshot").run({}, noDisplay.ctx), {
    instanceOf: ToolError,
    message: /no display to capture: DISPLAY is not set/,
  });
});

test("capture_screenshot writes the PNG to outputPath in the workspace, or a temporary file; outside is refused", async (t) => {
  const png = "\\211PNG\\r\\n\\032\\n";
  const { ctx } = await withPrograms({ scrot: `[ "$1" = "--overwrite" ] || exit 3\nprintf '${png}fake' > "$2"` }, { DISPLAY: ":0" });
  const shot = (await tool("capture_screenshot").run({ outputPath: "shots/screen.png" }, ctx)) as Record<string, unknown>;
  t.deepEqual(shot, { path: "shots/screen.png", bytes: 12, program: "scrot", target: "screen" });
  t.deepEqual([...(await readFile(join(ctx.workspace.root, "shots", "screen.png"))).subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  const temp = (await tool("capture_screenshot").run({}, ctx)) as { path: string; bytes: number };
  t.regex(temp.path, /screenshot-[0-9a-f-]+\.png$/);
  t.is(temp.bytes, 12);
  await t.throwsAsync(tool("capture_screenshot").run({ outputPath: "../escape.png" }, ctx), {
    instanceOf: PolicyBlock,
    message: /outside the workspace/,
  });
});

test("capture_screenshot of a window finds it with xdotool and captures it with import", async (t) => {
  const { ctx, bin } = await withPrograms(
    {
      xdotool: '[ "$1 $2 $3" = "search --name Terminal" ] && echo 4242 || exit 1',
      import: `echo "$@" > ${"$0"}.args\nprintf png > "$3"`,
    },
    { DISPLAY: ":0" },
  );
  t.like(await tool("capture_screenshot").run({ target: "Terminal", outputPath: "w.png" }, ctx), {
    path: "w.png",
    program: "import",
    bytes: 3,
  });
  t.is((await readFile(join(bin, "import.args"), "utf8")).trim(), `-window 4242 ${join(ctx.workspace.root, "w.png")}`);
  await t.throwsAsync(tool("capture_screenshot").run({ target: "Nothing", outputPath: "n.png" }, ctx), {
    instanceOf: ToolError,
    message: "no window titled 'Nothing'",
  });
});
