#!/usr/bin/env node
// Checks everything under deploy/ without a cluster: YAML syntax, the Helm chart rendered and
// cross-checked, setting names against services/runtime/config/the settings schemas (through the real
// config loader), the systemd units (systemd-analyze verify) and the NATS configs (nats-server -t).
// Run from the repository root: `node deploy/check.mjs` (exits 1 when a check fails), or
// `node deploy/check.mjs --render` to print the chart as rendered with example values.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Engine } from "./gotpl.mjs";

const deployDir = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(deployDir, "..");
const chartDir = join(deployDir, "helm", "meshwork");
const counts = { passed: 0, failed: 0, skipped: 0 };
const renderOnly = process.argv.includes("--render");

function report(status, name, detail = "") {
  counts[status]++;
  if (renderOnly) return;
  const tag = { passed: "ok  ", failed: "FAIL", skipped: "skip" }[status];
  console.log(`${tag} ${name}${detail ? `\n       ${detail.replaceAll("\n", "\n       ")}` : ""}`);
}
const check = (name, problems) => (problems.length ? report("failed", name, problems.join("\n")) : report("passed", name));
const rel = (p) => relative(repoRoot, p);

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
}
const files = walk(deployDir).sort();

function which(cmd) {
  const r = spawnSync("sh", ["-c", `command -v ${cmd}`], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : null;
}

// ------------------------------------------------------------------ the settings, from the source
// The loader is TypeScript; tsx (a dependency) registers the same loader bin/meshwork.js uses.
const { register } = await import("tsx/esm/api");
register();
const { meshSettings, loadMeshConfig } = await import(pathToFileURL(join(repoRoot, "services/mesh-config.ts")).href);
const { trackingModule } = await import(pathToFileURL(join(repoRoot, "services/tracking/index.ts")).href);
const { protectionModule } = await import(pathToFileURL(join(repoRoot, "services/protection/index.ts")).href);
const { agentsModule } = await import(pathToFileURL(join(repoRoot, "services/agents/index.ts")).href);
const environmentForm = (key) => key.replaceAll(":", "__");
const settings = meshSettings();
const envForms = new Map(settings.map((s) => [environmentForm(s.key), s]));
const keys = new Set(settings.map((s) => s.key));
const aliases = new Set(settings.flatMap((s) => s.meta.aliases ?? []));
const sections = [...new Set(settings.map((s) => s.key.split(":")[0]))];

/** Loads configuration as a Meshwork process would; returns [config, error message]. */
function tryLoad(env, appsettings) {
  const cwd = mkdtempSync(join(tmpdir(), "meshwork-deploy-check-"));
  try {
    if (appsettings !== undefined) writeFileSync(join(cwd, "appsettings.json"), appsettings);
    return [loadMeshConfig({ env, cwd, flags: [] }), null];
  } catch (err) {
    return [null, err.message];
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------ 1. setting names in every file
{
  // Exact spelling: the loader forgives case, but a reader copying a name should get the real one.
  const envRe = new RegExp(`\\b(?:${sections.join("|")})__[A-Za-z0-9_]+`, "g");
  const keyRe = new RegExp(`\\b(?:${sections.join("|")}):[A-Z][A-Za-z0-9]*(?::[A-Z][A-Za-z0-9]*)*`, "g");
  const problems = [];
  for (const file of files) {
    if (file.endsWith(".mjs")) continue;
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(envRe))
      if (!envForms.has(m[0])) problems.push(`${rel(file)}: ${m[0]} is not an environment form in the settings schemas`);
    for (const m of text.matchAll(keyRe))
      if (!keys.has(m[0])) problems.push(`${rel(file)}: ${m[0]} is not a setting key in the settings schemas`);
  }
  check("setting names (Section__Key, Section:Key) in deploy/ match the settings schemas exactly", problems);
}

// ------------------------------------------------------------------ 2. YAML syntax
let YAML = null;
try {
  // Not a dependency of its own: `yaml` is installed with the OpenTelemetry SDK. Without it the
  // YAML checks are skipped, never failed.
  YAML = (await import("yaml")).default;
} catch {
  report("skipped", "YAML parsing", "the `yaml` package is not resolvable from deploy/");
}
function parseYamlDocs(text, label) {
  const docs = YAML.parseAllDocuments(text, { uniqueKeys: true });
  const problems = [];
  for (const d of docs) for (const e of [...d.errors, ...d.warnings]) problems.push(`${label}: ${e.message.split("\n")[0]}`);
  return { objects: docs.map((d) => d.toJS()).filter((o) => o !== null && o !== undefined), problems };
}
if (YAML) {
  const plainYaml = files.filter((f) => /\.ya?ml$/.test(f) && !f.includes(`${join("meshwork", "templates")}`));
  const problems = plainYaml.flatMap((f) => parseYamlDocs(readFileSync(f, "utf8"), rel(f)).problems);
  check(`YAML syntax: ${plainYaml.map((f) => rel(f)).join(", ")}`, problems);
}

// ------------------------------------------------------------------ 3. the Helm chart
const releaseCases = [
  {
    name: "defaults + database secret + nats.url",
    release: "demo",
    values: { database: { existingSecret: "meshwork-db" }, nats: { url: "nats://meshwork:pw@nats:4222" } },
  },
  {
    name: "HPA, existing NATS secret, one tracking replica, overrides",
    release: "meshwork",
    values: {
      database: { existingSecret: "db", existingSecretKey: "url" },
      nats: { existingSecret: "nats-creds" },
      tracking: {
        replicaCount: 1,
        podDisruptionBudget: { enabled: false },
        port: 9191,
        extraEnv: [{ name: "OTEL_SERVICE_NAME", value: "t" }],
      },
      gateway: { autoscaling: { enabled: true }, preStopSleepSeconds: 0, ports: { tracking: 9080 } },
      config: { Logging: { Level: "debug" }, Telemetry: { Exporter: "otlp", Endpoint: "http://collector:4317" } },
      imagePullSecrets: [{ name: "regcred" }],
    },
  },
];

function deepMerge(base, over) {
  if (!isMap(base) || !isMap(over)) return over === undefined ? base : over;
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === null)
      delete out[k]; // Helm: null removes a default
    else out[k] = deepMerge(base[k], v);
  }
  return out;
}
function isMap(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** Renders with `helm template` when helm exists, else with gotpl.mjs. Returns { manifests, notes }. */
function renderChart({ release, values }) {
  const helm = which("helm");
  if (helm) {
    const dir = mkdtempSync(join(tmpdir(), "meshwork-values-"));
    try {
      const valuesFile = join(dir, "values.json"); // JSON is YAML
      writeFileSync(valuesFile, JSON.stringify(values));
      const r = spawnSync(helm, ["template", release, chartDir, "--namespace", "default", "-f", valuesFile], { encoding: "utf8" });
      if (r.status !== 0) throw new Error(r.stderr.trim());
      return { manifests: r.stdout, notes: null, renderer: "helm template" };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const chart = YAML.parse(readFileSync(join(chartDir, "Chart.yaml"), "utf8"));
  const defaults = YAML.parse(readFileSync(join(chartDir, "values.yaml"), "utf8"));
  const engine = new Engine({ toYaml: (v) => YAML.stringify(v, { indentSeq: false, sortMapEntries: true, lineWidth: 0 }) });
  const templatesDir = join(chartDir, "templates");
  const names = readdirSync(templatesDir).sort();
  for (const n of names) engine.add(`${chart.name}/templates/${n}`, readFileSync(join(templatesDir, n), "utf8"));
  const top = {
    Values: deepMerge(defaults, values),
    Release: { Name: release, Namespace: "default", Service: "Helm", IsInstall: true, IsUpgrade: false, Revision: 1 },
    Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion },
    Capabilities: { KubeVersion: { Version: "v1.30.0", Major: "1", Minor: "30" } },
  };
  let manifests = "";
  let notes = null;
  for (const n of names) {
    if (n.startsWith("_")) continue;
    const tname = `${chart.name}/templates/${n}`;
    const out = engine.execute(tname, { ...top, Template: { Name: tname, BasePath: `${chart.name}/templates` } });
    if (n === "NOTES.txt") notes = out;
    else if (out.trim()) manifests += `---\n# Source: ${tname}\n${out}\n`;
  }
  return { manifests, notes, renderer: "gotpl.mjs (helm not installed)" };
}

const dns1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const matches = (selector, labels) => Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);

/** Cross-checks rendered objects the way the API server and Meshwork's loader would. */
function checkObjects(objects, values) {
  const problems = [];
  const byKind = (k) => objects.filter((o) => o.kind === k);
  for (const o of objects) {
    if (!o.apiVersion || !o.kind || !o.metadata?.name)
      problems.push(`object without apiVersion/kind/metadata.name: ${JSON.stringify(o).slice(0, 80)}`);
    else if (!dns1123.test(o.metadata.name) || o.metadata.name.length > 63)
      problems.push(`${o.kind} ${o.metadata.name}: not a DNS-1123 label of at most 63 characters`);
  }
  const names = new Set(objects.map((o) => `${o.kind}/${o.metadata?.name}`));
  if (names.size !== objects.length) problems.push("two objects share a kind and name");
  const deployments = byKind("Deployment");
  const secrets = new Set(
    [...byKind("Secret").map((s) => s.metadata.name), values.database?.existingSecret, values.nats?.existingSecret].filter(Boolean),
  );
  const configMaps = new Map(byKind("ConfigMap").map((c) => [c.metadata.name, c]));
  const services = byKind("Service");

  for (const d of deployments) {
    const at = `Deployment ${d.metadata.name}`;
    const pod = d.spec.template;
    if (!matches(d.spec.selector?.matchLabels, pod.metadata?.labels)) problems.push(`${at}: selector does not match the pod labels`);
    const volumes = new Map((pod.spec.volumes ?? []).map((v) => [v.name, v]));
    for (const v of volumes.values())
      if (v.configMap && !configMaps.has(v.configMap.name)) problems.push(`${at}: volume ${v.name} names a ConfigMap that is not rendered`);
    for (const c of pod.spec.containers) {
      const cat = `${at} container ${c.name}`;
      const env = c.env ?? [];
      const seen = new Set();
      for (const e of env) {
        if (seen.has(e.name)) problems.push(`${cat}: env ${e.name} twice`);
        seen.add(e.name);
        if ("value" in e && typeof e.value !== "string")
          problems.push(`${cat}: env ${e.name} value is ${typeof e.value}, Kubernetes needs a string (quote it)`);
        if (!("value" in e) && !e.valueFrom) problems.push(`${cat}: env ${e.name} has neither value nor valueFrom`);
        const ref = e.valueFrom?.secretKeyRef;
        if (ref && !secrets.has(ref.name))
          problems.push(`${cat}: env ${e.name} refers to Secret ${ref.name}, which is neither rendered nor a configured existing Secret`);
        const section = e.name.split("__")[0];
        if (e.name.includes("__") && sections.some((s) => s.toLowerCase() === section.toLowerCase()) && !envForms.has(e.name))
          problems.push(`${cat}: env ${e.name} is not an environment form in the settings schemas`);
      }
      const ports = new Map((c.ports ?? []).map((p) => [p.name, p.containerPort]));
      for (const p of c.ports ?? []) {
        if (!Number.isInteger(p.containerPort)) problems.push(`${cat}: containerPort ${p.containerPort} is not an integer`);
        if (p.name && (p.name.length > 15 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(p.name) || !/[a-z]/.test(p.name)))
          problems.push(`${cat}: port name ${p.name} is not an IANA_SVC_NAME (15 chars max)`);
      }
      for (const probeName of ["startupProbe", "readinessProbe", "livenessProbe"]) {
        const probe = c[probeName];
        if (!probe) continue;
        if (probe.grpc && !Number.isInteger(probe.grpc.port))
          problems.push(`${cat}: ${probeName}.grpc.port must be a number (named ports are not allowed there)`);
        if (probe.grpc && ![...ports.values()].includes(probe.grpc.port))
          problems.push(`${cat}: ${probeName}.grpc.port ${probe.grpc.port} is not a container port`);
        const named = probe.tcpSocket?.port ?? probe.httpGet?.port;
        if (typeof named === "string" && !ports.has(named))
          problems.push(`${cat}: ${probeName} port ${named} is not a named container port`);
      }
      for (const m of c.volumeMounts ?? []) if (!volumes.has(m.name)) problems.push(`${cat}: volumeMount ${m.name} has no volume`);
      if (c.securityContext?.readOnlyRootFilesystem && !(c.volumeMounts ?? []).some((m) => m.mountPath === "/tmp"))
        problems.push(`${cat}: read-only root but no writable /tmp (tsx caches there)`);

      // The real loader, with the container's environment and the rendered appsettings.json.
      if (!(c.command ?? []).join(" ").includes("bin/meshwork.js")) continue;
      const literal = Object.fromEntries(env.filter((e) => "value" in e).map((e) => [e.name, String(e.value)]));
      const fromSecrets = Object.fromEntries(
        env
          .filter((e) => e.valueFrom?.secretKeyRef)
          .map((e) => [e.name, e.name === "DATABASE_URL" ? "postgres://meshwork:pw@db:5432/meshwork" : "nats://meshwork:pw@nats:4222"]),
      );
      const configMount = (c.volumeMounts ?? []).find((m) => m.subPath === "appsettings.json");
      const cmName = configMount && volumes.get(configMount.name)?.configMap?.name;
      const appsettings = cmName ? configMaps.get(cmName)?.data?.["appsettings.json"] : undefined;
      if (!configMount) problems.push(`${cat}: appsettings.json is not mounted`);
      else if (configMount.mountPath !== `${c.workingDir}/appsettings.json`)
        problems.push(
          `${cat}: appsettings.json mounted at ${configMount.mountPath}, but the loader reads it from workingDir ${c.workingDir}`,
        );
      const [loaded, error] = tryLoad({ ...literal, ...fromSecrets }, appsettings);
      // One merged view of the runtime's and the modules' settings, as the checks below read them.
      const config = loaded && {
        ...loaded.runtime,
        services: { ...loaded.runtime.services, tracking: { address: loaded.get(trackingModule.settings).services.tracking.address } },
        ports: {
          tracking: loaded.get(trackingModule.settings).fronts.tracking.port,
          protection: loaded.get(protectionModule.settings).fronts.protection.port,
          agents: loaded.get(agentsModule.settings).gateway.server.port,
        },
      };
      if (error) {
        problems.push(`${cat}: Meshwork's config loader rejects it: ${error}`);
        continue;
      }
      const args = c.args ?? [];
      if (args[0] === "serve") {
        if (config.services.host !== "0.0.0.0")
          problems.push(`${cat}: Services:Host is ${config.services.host}; probes and gateways cannot reach it`);
        if (![...ports.values()].includes(config.services.port))
          problems.push(`${cat}: Services:Port ${config.services.port} is not a container port`);
        if (!config.database.url || !config.nats.url)
          problems.push(`${cat}: serves without DATABASE_URL or NATS_URL (would fall back to embedded/in-process)`);
      } else if (args[0] === "gateway") {
        if (config.fronts.host !== "0.0.0.0") problems.push(`${cat}: Fronts:Host is ${config.fronts.host}; the Service cannot reach it`);
        for (const [front, port] of Object.entries(config.ports)) {
          if (![...ports.values()].includes(port)) problems.push(`${cat}: the ${front} front's port ${port} is not a container port`);
        }
        const target = new URL(config.services.tracking.address);
        const svc = services.find((s) => s.metadata.name === target.hostname);
        if (!svc) problems.push(`${cat}: Services:Tracking:Address ${target.href} names no rendered Service`);
        else if (!svc.spec.ports.some((p) => String(p.port) === target.port))
          problems.push(`${cat}: Services:Tracking:Address port ${target.port} is not a port of Service ${svc.metadata.name}`);
      } else problems.push(`${cat}: unexpected args ${JSON.stringify(args)}`);
    }
  }
  for (const s of services) {
    const target = deployments.find((d) => matches(s.spec.selector, d.spec.template.metadata.labels));
    if (!target) {
      problems.push(`Service ${s.metadata.name}: selector matches no Deployment`);
      continue;
    }
    const named = new Set(target.spec.template.spec.containers.flatMap((c) => (c.ports ?? []).map((p) => p.name)));
    for (const p of s.spec.ports)
      if (typeof p.targetPort === "string" && !named.has(p.targetPort))
        problems.push(`Service ${s.metadata.name}: targetPort ${p.targetPort} is not a port of ${target.metadata.name}`);
  }
  for (const p of byKind("PodDisruptionBudget")) {
    if (!deployments.some((d) => matches(p.spec.selector?.matchLabels, d.spec.template.metadata.labels)))
      problems.push(`PodDisruptionBudget ${p.metadata.name}: selector matches no Deployment`);
  }
  for (const h of byKind("HorizontalPodAutoscaler")) {
    const d = deployments.find((x) => x.metadata.name === h.spec.scaleTargetRef.name);
    if (!d) problems.push(`HPA ${h.metadata.name}: target ${h.spec.scaleTargetRef.name} is not rendered`);
    else if ("replicas" in d.spec)
      problems.push(`HPA ${h.metadata.name}: ${d.metadata.name} also sets spec.replicas, which fights the HPA`);
  }
  return problems;
}

// `node deploy/check.mjs --render`: print the first case's manifests and NOTES, check nothing.
if (YAML && process.argv.includes("--render")) {
  const r = renderChart(releaseCases[0]);
  process.stdout.write(`${r.manifests}\n# NOTES.txt (${r.renderer})\n${r.notes ?? ""}\n`);
  process.exit(0);
}

if (YAML) {
  const helm = which("helm");
  if (helm) {
    const r = spawnSync(helm, ["lint", chartDir, "--set", "database.existingSecret=db", "--set", "nats.url=nats://nats:4222"], {
      encoding: "utf8",
    });
    check("helm lint", r.status === 0 ? [] : [r.stdout + r.stderr]);
  } else {
    report("skipped", "helm lint", "helm is not installed; the chart is rendered with deploy/gotpl.mjs instead");
  }
  for (const c of releaseCases) {
    let rendered;
    try {
      rendered = renderChart(c);
    } catch (err) {
      report("failed", `chart renders: ${c.name}`, err.message);
      continue;
    }
    const { objects, problems } = parseYamlDocs(rendered.manifests, `rendered (${c.name})`);
    const kinds = objects.map((o) => o.kind).join(", ");
    check(`chart renders to valid YAML with ${rendered.renderer}: ${c.name} [${kinds}]`, problems);
    if (!problems.length)
      check(
        `rendered objects are consistent and accepted by the config loader: ${c.name}`,
        checkObjects(objects, deepMerge(YAML.parse(readFileSync(join(chartDir, "values.yaml"), "utf8")), c.values)),
      );
    if (rendered.notes !== null)
      check(`NOTES.txt renders: ${c.name}`, rendered.notes.includes("Meshwork") ? [] : ["NOTES.txt rendered empty"]);
  }
  // Without a database Secret and NATS the chart must refuse, not start pods that each run
  // an embedded database.
  try {
    renderChart({ release: "demo", values: {} });
    report("failed", "chart refuses to render without database.existingSecret", "it rendered");
  } catch (err) {
    check(
      "chart refuses to render without database.existingSecret",
      /database\.existingSecret is required/.test(err.message) ? [] : [err.message],
    );
  }
}

// ------------------------------------------------------------------ 4. systemd units and env file
const systemdDir = join(deployDir, "systemd");
const units = files.filter((f) => f.startsWith(systemdDir) && f.endsWith(".service"));
function parseEnvFile(text) {
  const env = {};
  for (const line of text.split("\n")) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m) env[m[1]] = m[2].replace(/^"(.*)"$/, "$1");
  }
  return env;
}
{
  const example = parseEnvFile(readFileSync(join(systemdDir, "meshwork.env.example"), "utf8"));
  const unknown = Object.keys(example).filter(
    (k) => !envForms.has(k) && !aliases.has(k) && k !== "MESHWORK_ENVIRONMENT" && !k.startsWith("OTEL_"),
  );
  const [, error] = tryLoad(example);
  check("meshwork.env.example: every name is a Meshwork setting and the loader accepts the values", [
    ...unknown.map((k) => `${k} is not a Meshwork setting`),
    ...(error ? [error] : []),
  ]);
  for (const unit of units) {
    const text = readFileSync(unit, "utf8");
    const unitEnv = parseEnvFile([...text.matchAll(/^Environment=(.*)$/gm)].map((m) => m[1]).join("\n"));
    const problems = [];
    if (!/^EnvironmentFile=-?\/etc\/meshwork\/meshwork\.env$/m.test(text)) problems.push("no EnvironmentFile=/etc/meshwork/meshwork.env");
    for (const d of [
      "NoNewPrivileges=yes",
      "ProtectSystem=strict",
      "Restart=on-failure",
      "StateDirectory=meshwork",
      "ReadWritePaths=/var/lib/meshwork",
    ])
      if (!text.includes(`\n${d}\n`)) problems.push(`missing ${d}`);
    if (unitEnv.Data__Dir !== "/var/lib/meshwork") problems.push("Data__Dir is not the StateDirectory /var/lib/meshwork");
    // EnvironmentFile= overrides Environment=, as systemd applies them.
    for (const [label, env] of [
      ["unit defaults alone", unitEnv],
      ["unit defaults + meshwork.env.example", { ...unitEnv, ...example }],
    ]) {
      const [, error] = tryLoad(env);
      if (error) problems.push(`${label}: ${error}`);
    }
    check(`${rel(unit)}: environment and hardening`, problems);
  }
}
const analyze = which("systemd-analyze");
if (!analyze) report("skipped", "systemd-analyze verify", "systemd-analyze is not installed");
else {
  // verify exits 0 on unknown keys and unparsable values (it only warns), so any output fails.
  // It also checks that ExecStart's binary (/usr/bin/node) exists on this machine.
  const r = spawnSync(analyze, ["verify", "--man=no", ...units], { encoding: "utf8" });
  const out = (r.stdout + r.stderr).trim();
  check(`systemd-analyze verify ${units.map((u) => basename(u)).join(" ")}`, r.status === 0 && !out ? [] : [out || `exit ${r.status}`]);
  // systemd's own exposure score (0 = locked down, 10 = unprotected); keep every unit under 2.5.
  for (const unit of units) {
    const s = spawnSync(analyze, ["security", "--offline=true", "--threshold=25", unit], { encoding: "utf8" });
    const overall = /Overall exposure level for \S+: ([\d.]+)/.exec(s.stdout)?.[1];
    check(
      `systemd-analyze security ${basename(unit)}: exposure ${overall ?? "?"} (at most 2.5)`,
      s.status === 0 ? [] : [(s.stderr || s.stdout).trim().split("\n").slice(-3).join("\n")],
    );
  }
}

// ------------------------------------------------------------------ 5. NATS configuration
const natsServer =
  which("nats-server") ?? (spawnSync("test", ["-x", "/usr/sbin/nats-server"]).status === 0 ? "/usr/sbin/nats-server" : null);
if (!natsServer) report("skipped", "nats-server -t", "nats-server is not installed");
else {
  // The configs take passwords (and the cluster its node name) from the environment.
  const env = { ...process.env, MESHWORK_NATS_PASSWORD: "check", SYS_NATS_PASSWORD: "check", NATS_SERVER_NAME: "nats-1" };
  for (const conf of ["nats-server.conf", "nats-cluster.conf"]) {
    const r = spawnSync(natsServer, ["-c", join(deployDir, "nats", conf), "-t"], { encoding: "utf8", env });
    check(`nats-server -c deploy/nats/${conf} -t`, r.status === 0 ? [] : [(r.stdout + r.stderr).trim()]);
  }
}

console.log(`\n${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
process.exit(counts.failed ? 1 : 0);
