// get_environment: the host description, and no secret leaking through includeEnvVars (by name, by a
// URL password, by equality with a configured secret setting), and the secret values a module passes.
import test from "ava";
import { z } from "zod";
import { setting } from "../../../runtime/config/index.js";
import { providersSetting } from "../../settings.js";
import { defaultToolsSettings, toolsSettings } from "../settings.js";
import { testToolContext, toolNamed } from "../testing.js";
import { environmentTools, MASK, maskedEnvironment, secretValuesOf } from "./index.js";

const tool = toolNamed(environmentTools, "get_environment");

test("without includeEnvVars it describes the host and lists no variable", async (t) => {
  const ctx = await testToolContext();
  const record = (await tool.run({}, ctx)) as Record<string, unknown>;
  t.is(record.os, process.platform);
  t.is(record.nodeVersion, process.version);
  t.is(record.workspace, ctx.settings.workspaceRoot);
  t.false("envVars" in record);
});

test("includeEnvVars lists the variables and masks secret names, URL passwords and configured secrets", async (t) => {
  const planted = {
    MESHWORK_TEST_PLAIN: "hello",
    MESHWORK_TEST_API_KEY: "k-123",
    MESHWORK_TEST_GITHUB_TOKEN: "ghp_x",
    MESHWORK_TEST_DB_PASSWORD: "pw",
    MESHWORK_TEST_DATABASE: "postgres://app:s3cret@db.internal:5432/app",
    MESHWORK_TEST_PUBLIC_URL: "https://example.test/path",
    MESHWORK_TEST_OPAQUE: "brave-key-value-9",
    MESHWORK_TEST_FROM_MODULE: "module-secret-42",
  };
  Object.assign(process.env, planted);
  t.teardown(() => {
    for (const name of Object.keys(planted)) delete process.env[name];
  });
  const ctx = await testToolContext({
    settings: { webSearch: { ...defaultToolsSettings().webSearch, apiKey: "brave-key-value-9" } },
    services: { workspace: undefined as never, secrets: () => ["module-secret-42"] },
  });
  ctx.services.workspace = ctx.workspace;
  const record = (await tool.run({ includeEnvVars: true }, ctx)) as { envVars: Record<string, string> };
  const env = record.envVars;
  t.is(env.MESHWORK_TEST_PLAIN, "hello");
  t.is(env.MESHWORK_TEST_PUBLIC_URL, "https://example.test/path");
  for (const name of ["API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "DATABASE", "OPAQUE", "FROM_MODULE"]) {
    t.is(env[`MESHWORK_TEST_${name}`], MASK, name);
  }
  const text = JSON.stringify(record);
  for (const secret of ["k-123", "ghp_x", "s3cret", "brave-key-value-9", "module-secret-42"]) t.false(text.includes(secret), secret);
  t.true(Object.keys(env).includes("PATH"));
});

test("a value that contains a configured secret is masked too", (t) => {
  const shown = maskedEnvironment({ A: "Bearer abcdef123", B: "abc" }, ["abcdef123", "abc"]);
  t.is(shown.A, MASK);
  t.is(shown.B, MASK);
  t.deepEqual(maskedEnvironment({ C: "xyz" }, ["abcdef123"]), { C: "xyz" });
});

test("secretValuesOf finds secret settings, secret map fields and secret list fields of any schema", (t) => {
  const schema = z.object({
    providers: providersSetting,
    auth: z.object({
      apiKeys: setting.list({
        fields: [
          { name: "Name", required: true },
          { name: "Key", required: true, secret: true },
        ],
        map: (item) => ({ name: item.Name!, key: item.Key! }),
        description: "keys",
      }),
    }),
    tools: toolsSettings,
  });
  const settings = {
    providers: { openai: { kind: "openai", baseUrl: "https://api.example.test/v1", apiKey: "sk-provider-123", models: ["m"] } },
    auth: { apiKeys: [{ name: "ops", key: "gateway-key-0123456789" }] },
    tools: { ...defaultToolsSettings(), mesh: { ...defaultToolsSettings().mesh, bearerToken: "mesh-bearer-9" } },
  };
  t.deepEqual(secretValuesOf(schema, settings).sort(), ["gateway-key-0123456789", "mesh-bearer-9", "sk-provider-123"]);
  t.deepEqual(maskedEnvironment({ OPENAI_BASE: "https://api.example.test/v1", X: "sk-provider-123" }, secretValuesOf(schema, settings)), {
    OPENAI_BASE: "https://api.example.test/v1",
    X: MASK,
  });
});
