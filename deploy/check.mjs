#!/usr/bin/env node
// Checks everything under deploy/ without a cluster: YAML syntax, the Helm chart rendered and
// cross-checked, setting names against services/runtime/config/the settings schemas (through the real
// config loader), the systemd units (systemd-analyze verify) and the NATS configs (nats-server -t).
// Run from the repository root: `node deploy/check.mjs` (exits 1 when a check fails), or
// `node deploy/check.mjs --render [--values FILE]` to print the chart as rendered with FILE (YAML
// or JSON) over the defaults (the first example's values without FILE); `--values FILE` without
// --render checks FILE as one more example.
// Value usage is checked by rendering through gotpl.mjs with a recording Proxy over .Values (helm
// cannot say what a template read), whether or not helm is installed.
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
const valuesFlag = process.argv.indexOf("--values");
const valuesFile = valuesFlag === -1 ? null : process.argv[valuesFlag + 1];
if (valuesFlag !== -1 && (!valuesFile || valuesFile.startsWith("--"))) {
  console.error("check.mjs: --values needs a file");
  process.exit(2);
}

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
// --render checks nothing, so it skips loading the service modules (seconds of start-up).
let tsxRegistered = false;
async function importSource(path) {
  if (!tsxRegistered) {
    const { register } = await import("tsx/esm/api");
    register();
    tsxRegistered = true;
  }
  return import(pathToFileURL(join(repoRoot, path)).href);
}
const { meshSettings, loadMeshConfig } = renderOnly ? { meshSettings: () => [] } : await importSource("services/mesh-config.ts");
const { trackingModule } = renderOnly ? {} : await importSource("services/tracking/index.ts");
const { protectionModule } = renderOnly ? {} : await importSource("services/protection/index.ts");
const { agentsModule } = renderOnly ? {} : await importSource("services/agents/index.ts");
const environmentForm = (key) => key.replaceAll(":", "__");
const settings = meshSettings();
const envForms = new Map(settings.map((s) => [environmentForm(s.key), s]));
const keys = new Set(settings.map((s) => s.key));
const aliases = new Set(settings.flatMap((s) => s.meta.aliases ?? []));
const sections = [...new Set(settings.map((s) => s.key.split(":")[0]))];
// List settings take indexed records (`Gateway__Auth__ApiKeys__0__Key`), map settings named
// entries (`Providers__openai__BaseUrl`); the loader checks the rest of such a name.
const compoundEnvForms = settings.filter((s) => s.meta.listFields || s.meta.map).map((s) => `${environmentForm(s.key)}__`);
const isSettingEnv = (name) => envForms.has(name) || compoundEnvForms.some((prefix) => name.startsWith(prefix));

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
if (!renderOnly) {
  // Exact spelling: the loader forgives case, but a reader copying a name should get the real one.
  const envRe = new RegExp(`\\b(?:${sections.join("|")})__[A-Za-z0-9_]+`, "g");
  const keyRe = new RegExp(`\\b(?:${sections.join("|")}):[A-Z][A-Za-z0-9]*(?::[A-Z][A-Za-z0-9]*)*`, "g");
  const problems = [];
  for (const file of files) {
    if (file.endsWith(".mjs")) continue;
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(envRe))
      if (!isSettingEnv(m[0])) problems.push(`${rel(file)}: ${m[0]} is not an environment form in the settings schemas`);
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
  {
    name: "everything on (ingress, HPA, workers, job, interface, persistence, telemetry, env)",
    release: "full",
    values: {
      database: { existingSecret: "meshwork-db" },
      nats: { url: "nats://meshwork:pw@nats:4222" },
      image: { tag: "1.2.3" },
      podAnnotations: { "example.org/team": "agents" },
      config: {
        data: {
          Gateway__Auth__Enabled: "true",
          Logging__Level: "debug",
          AgentGateway__Agents__reviewer__SystemPrompt: "You review changes.",
        },
        secretData: {
          Gateway__Auth__ApiKeys__0__Key: "0123456789abcdef0123",
          Gateway__Auth__ApiKeys__0__Name: "ops",
          Gateway__Auth__ApiKeys__0__Role: "Admin",
        },
      },
      telemetry: { enabled: true, otlpEndpoint: "http://otel-collector:4317", otlpProtocol: "grpc", serviceName: "mw" },
      gateway: { image: { repository: "registry.example/meshwork-gateway", tag: "g1" }, autoscaling: { enabled: true } },
      daemon: {
        image: { repository: "registry.example/meshwork-daemon" },
        persistence: { enabled: true, size: "5Gi", storageClass: "fast" },
        podDisruptionBudget: { enabled: true },
      },
      interface: { enabled: true, image: { repository: "registry.example/meshwork-ui", tag: "u1" } },
      ingress: {
        enabled: true,
        className: "nginx",
        annotations: { "nginx.ingress.kubernetes.io/affinity": "cookie" },
        hosts: [{ host: "agents.example.org", paths: [{ path: "/", pathType: "Prefix" }] }],
        tls: [{ secretName: "agents-tls", hosts: ["agents.example.org"] }],
      },
      workers: { enabled: true },
      job: {
        enabled: true,
        agent: "reviewer",
        workflow: '{ "name": "smoke", "steps": [{ "prompt": "hi", "expect": "." }] }',
        backoffLimit: 2,
      },
    },
  },
];

/**
 * Wraps values so every key a template reads is recorded as a dotted path. Arrays are handed out
 * as they are (reading one counts as reading all of it); toYaml/toJson walk maps through get, so a
 * subtree given whole to toYaml counts as read.
 */
function recording(values, used, path = "") {
  if (!isMap(values)) return values;
  return new Proxy(values, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver);
      if (typeof key !== "string" || !Object.hasOwn(target, key)) return v;
      const at = path ? `${path}.${key}` : key;
      used.add(at);
      return recording(v, used, at);
    },
  });
}
/** Dotted paths of values.yaml's leaves: scalars, lists, and empty maps. */
function leafPaths(values, path = "") {
  if (!isMap(values) || Object.keys(values).length === 0) return [path];
  return Object.entries(values).flatMap(([k, v]) => leafPaths(v, path ? `${path}.${k}` : k));
}
// Values no template reads, on purpose: none today. Add a path here with the reason next to it.
const documentedOnlyValues = new Set([]);

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

/**
 * Renders with `helm template` when helm exists, else with gotpl.mjs. Returns { manifests, notes }.
 * With `used` (a Set), always gotpl.mjs, recording the value paths the templates read.
 */
function renderChart({ release, values }, used = null) {
  const helm = used ? null : which("helm");
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
    Values: used ? recording(deepMerge(defaults, values), used) : deepMerge(defaults, values),
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
  const workloads = [...deployments, ...byKind("Job")];
  const renderedSecrets = new Map(byKind("Secret").map((s) => [s.metadata.name, s]));
  const secrets = new Set([...renderedSecrets.keys(), values.database?.existingSecret, values.nats?.existingSecret].filter(Boolean));
  const configMaps = new Map(byKind("ConfigMap").map((c) => [c.metadata.name, c]));
  const claims = new Set(byKind("PersistentVolumeClaim").map((c) => c.metadata.name));
  const services = byKind("Service");
  const podAnnotations = Object.entries(values.podAnnotations ?? {});

  // ConfigMaps and Secrets used as envFrom: every name that looks like a setting must be one.
  const envSourceNames = new Set();
  for (const w of workloads)
    for (const c of w.spec.template.spec.containers)
      for (const from of c.envFrom ?? []) envSourceNames.add(from.configMapRef?.name ?? from.secretRef?.name);
  for (const [kind, source] of [
    ...byKind("ConfigMap").map((c) => ["ConfigMap", c]),
    ...[...renderedSecrets.values()].map((s) => ["Secret", s]),
  ]) {
    if (!envSourceNames.has(source.metadata.name)) continue;
    for (const [name, value] of Object.entries(source.data ?? source.stringData ?? {})) {
      if (typeof value !== "string") problems.push(`${kind} ${source.metadata.name}: ${name} is not a string`);
      const section = name.split("__")[0];
      if (name.includes("__") && sections.some((s) => s.toLowerCase() === section.toLowerCase()) && !isSettingEnv(name))
        problems.push(`${kind} ${source.metadata.name}: ${name} is not an environment form in the settings schemas`);
    }
  }

  for (const d of workloads) {
    const at = `${d.kind} ${d.metadata.name}`;
    const pod = d.spec.template;
    if (d.kind === "Deployment" && !matches(d.spec.selector?.matchLabels, pod.metadata?.labels))
      problems.push(`${at}: selector does not match the pod labels`);
    if (d.kind === "Job" && pod.spec.restartPolicy !== "Never")
      problems.push(`${at}: restartPolicy is ${pod.spec.restartPolicy}, not Never`);
    for (const [k, v] of podAnnotations)
      if (pod.metadata?.annotations?.[k] !== v) problems.push(`${at}: the pod lacks the release's podAnnotations ${k}`);
    const volumes = new Map((pod.spec.volumes ?? []).map((v) => [v.name, v]));
    for (const v of volumes.values()) {
      if (v.configMap && !configMaps.has(v.configMap.name)) problems.push(`${at}: volume ${v.name} names a ConfigMap that is not rendered`);
      if (v.persistentVolumeClaim && !claims.has(v.persistentVolumeClaim.claimName))
        problems.push(`${at}: volume ${v.name} names a PersistentVolumeClaim that is not rendered`);
    }
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
        if (e.name.includes("__") && sections.some((s) => s.toLowerCase() === section.toLowerCase()) && !isSettingEnv(e.name))
          problems.push(`${cat}: env ${e.name} is not an environment form in the settings schemas`);
      }
      const envFromData = {};
      for (const from of c.envFrom ?? []) {
        if (from.configMapRef) {
          const cm = configMaps.get(from.configMapRef.name);
          if (!cm) problems.push(`${cat}: envFrom ConfigMap ${from.configMapRef.name} is not rendered`);
          else Object.assign(envFromData, cm.data);
        }
        if (from.secretRef) {
          const secret = renderedSecrets.get(from.secretRef.name);
          if (!secret) problems.push(`${cat}: envFrom Secret ${from.secretRef.name} is not rendered`);
          else Object.assign(envFromData, secret.stringData);
        }
      }
      const ports = new Map((c.ports ?? []).map((p) => [p.name, p.containerPort]));
      for (const p of c.ports ?? []) {
        if (!Number.isInteger(p.containerPort)) problems.push(`${cat}: containerPort ${p.containerPort} is not an integer`);
        if (p.name && (p.name.length > 15 || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(p.name) || !/[a-z]/.test(p.name)))
          problems.push(`${cat}: port name ${p.name} is not an IANA_SVC_NAME (15 chars max)`);
      }
      const probePort = (probe) => {
        const p = probe.grpc?.port ?? probe.tcpSocket?.port ?? probe.httpGet?.port;
        return typeof p === "string" ? ports.get(p) : p;
      };
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

      // The Meshwork processes: `meshwork <mode>` and `app-daemon run <mode>`.
      const command = (c.command ?? []).join(" ");
      const isDaemon = command.includes("bin/app-daemon.js");
      if (!command.includes("bin/meshwork.js") && !isDaemon) continue;
      const byName = Object.fromEntries(env.map((e) => [e.name, e]));
      if (values.telemetry?.enabled) {
        for (const name of ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME"])
          if (!byName[name]?.value) problems.push(`${cat}: telemetry is on but ${name} is not set`);
        if (byName.OTEL_SDK_DISABLED) problems.push(`${cat}: telemetry is on but OTEL_SDK_DISABLED is set`);
      } else if (byName.OTEL_SDK_DISABLED?.value !== "true") problems.push(`${cat}: telemetry is off but OTEL_SDK_DISABLED is not "true"`);

      // The real loader, with the container's environment and the rendered appsettings.json.
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
      // Kubernetes: env wins over envFrom.
      const [loaded, error] = tryLoad({ ...envFromData, ...literal, ...fromSecrets }, appsettings);
      if (error) {
        problems.push(`${cat}: Meshwork's config loader rejects it: ${error}`);
        continue;
      }
      // One merged view of the runtime's and the modules' settings, as the checks below read them.
      const config = {
        ...loaded.runtime,
        addresses: Object.fromEntries(
          [trackingModule, protectionModule, agentsModule].map((m) => [m.name, m.address(loaded.get(m.settings))]),
        ),
        ports: {
          tracking: loaded.get(trackingModule.settings).fronts.tracking.port,
          protection: loaded.get(protectionModule.settings).fronts.protection.port,
          agents: loaded.get(agentsModule.settings).gateway.server.port,
        },
        agents: loaded.get(agentsModule.settings),
      };
      const args = isDaemon ? (c.args ?? []).slice(c.args?.[0] === "run" ? 1 : 0) : (c.args ?? []);
      const needsBackends = () => {
        if (!config.database.url || !config.nats.url)
          problems.push(`${cat}: runs without DATABASE_URL or NATS_URL (would fall back to embedded/in-process)`);
      };
      if (args[0] === "serve") {
        if (config.services.host !== "0.0.0.0")
          problems.push(`${cat}: Services:Host is ${config.services.host}; probes and gateways cannot reach it`);
        if (![...ports.values()].includes(config.services.port))
          problems.push(`${cat}: Services:Port ${config.services.port} is not a container port`);
        needsBackends();
      } else if (args[0] === "gateway") {
        if (config.fronts.host !== "0.0.0.0") problems.push(`${cat}: Fronts:Host is ${config.fronts.host}; the Service cannot reach it`);
        for (const [front, port] of Object.entries(config.ports)) {
          if (![...ports.values()].includes(port)) problems.push(`${cat}: the ${front} front's port ${port} is not a container port`);
        }
        for (const [service, address] of Object.entries(config.addresses)) {
          const target = new URL(address);
          const svc = services.find((s) => s.metadata.name === target.hostname);
          if (!svc) problems.push(`${cat}: the ${service} address ${target.href} names no rendered Service`);
          else if (!svc.spec.ports.some((p) => String(p.port) === target.port))
            problems.push(`${cat}: the ${service} address port ${target.port} is not a port of Service ${svc.metadata.name}`);
        }
        for (const probeName of ["startupProbe", "readinessProbe", "livenessProbe"]) {
          const probe = c[probeName];
          if (!probe?.httpGet || probePort(probe) !== config.ports.agents)
            problems.push(`${cat}: ${probeName} does not go to the agent front (Gateway:Server:Port ${config.ports.agents})`);
        }
      } else if (args[0] === "worker") {
        needsBackends();
        for (const name of ["Workers__Enabled", "Workers__Transport", "Workers__StreamKey", "Workers__ConsumerGroup"])
          if (!literal[name]) problems.push(`${cat}: ${name} is not set`);
      } else if (args[0] === "job") {
        needsBackends();
        const agent = args[args.indexOf("--agent") + 1];
        const workflow = args[args.indexOf("--workflow") + 1];
        if (!args.includes("--agent") || !agent) problems.push(`${cat}: no --agent`);
        // `meshwork job` exits 2 for an agent without AgentGateway:Agents:<name> settings.
        else if (!Object.keys(config.agents.agentGateway.agents).some((name) => name.toLowerCase() === agent.toLowerCase()))
          problems.push(`${cat}: --agent ${agent} has no AgentGateway__Agents__${agent}__* settings (config.data or appsettings)`);
        const mount = (c.volumeMounts ?? []).find((m) => workflow?.startsWith(`${m.mountPath}/`));
        const cm = mount && configMaps.get(volumes.get(mount.name)?.configMap?.name);
        const file = workflow && mount ? workflow.slice(mount.mountPath.length + 1) : undefined;
        if (!cm?.data?.[file]) problems.push(`${cat}: --workflow ${workflow} is not a file of a mounted ConfigMap`);
        else {
          try {
            const parsed = JSON.parse(cm.data[file]);
            if (!Array.isArray(parsed.steps)) problems.push(`${cat}: the workflow has no steps list`);
          } catch (err) {
            problems.push(`${cat}: the workflow is not JSON: ${err.message}`);
          }
        }
      } else problems.push(`${cat}: unexpected args ${JSON.stringify(c.args ?? [])}`);

      if (isDaemon) {
        const health = config.agents.daemon.healthPort;
        if (![...ports.values()].includes(health)) problems.push(`${cat}: Daemon:HealthPort ${health} is not a container port`);
        for (const probeName of ["startupProbe", "readinessProbe", "livenessProbe"]) {
          const probe = c[probeName];
          if (probe?.httpGet?.path !== "/health" || probePort(probe) !== health)
            problems.push(`${cat}: ${probeName} is not /health on Daemon:HealthPort ${health}`);
        }
        if (config.agents.updates.autoApply) problems.push(`${cat}: Updates:AutoApply is on; a pod must not install releases`);
        const home = literal.HOME;
        if (!home) problems.push(`${cat}: HOME is not set (AgentGateway:DataDir is ~/.app)`);
        else if (!(c.volumeMounts ?? []).some((m) => m.mountPath === `${home}/.app`))
          problems.push(`${cat}: nothing is mounted at ${home}/.app (AgentGateway:DataDir), which the read-only root cannot hold`);
      }
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
  for (const ing of byKind("Ingress")) {
    for (const rule of ing.spec.rules ?? [])
      for (const path of rule.http?.paths ?? []) {
        const backend = path.backend?.service;
        const svc = services.find((s) => s.metadata.name === backend?.name);
        if (!svc) problems.push(`Ingress ${ing.metadata.name}: backend ${backend?.name} is not a rendered Service`);
        else {
          const port = svc.spec.ports.find((p) => p.name === backend.port?.name || p.port === backend.port?.number);
          if (!port)
            problems.push(
              `Ingress ${ing.metadata.name}: backend port ${JSON.stringify(backend.port)} is not a port of ${svc.metadata.name}`,
            );
          // The ingress is the agent front's: Gateway:Server:Port.
          else if (port.port !== values.gateway?.ports?.agents)
            problems.push(
              `Ingress ${ing.metadata.name}: backend port ${port.port} is not the agent front's (${values.gateway?.ports?.agents})`,
            );
        }
        if (!["Prefix", "Exact", "ImplementationSpecific"].includes(path.pathType))
          problems.push(`Ingress ${ing.metadata.name}: pathType ${path.pathType} is not Prefix, Exact or ImplementationSpecific`);
      }
  }
  for (const p of byKind("PodDisruptionBudget")) {
    if (!deployments.some((d) => matches(p.spec.selector?.matchLabels, d.spec.template.metadata.labels)))
      problems.push(`PodDisruptionBudget ${p.metadata.name}: selector matches no Deployment`);
    if ("minAvailable" in p.spec && "maxUnavailable" in p.spec)
      problems.push(`PodDisruptionBudget ${p.metadata.name}: minAvailable and maxUnavailable are exclusive`);
  }
  for (const h of byKind("HorizontalPodAutoscaler")) {
    const d = deployments.find((x) => x.metadata.name === h.spec.scaleTargetRef.name);
    if (!d) problems.push(`HPA ${h.metadata.name}: target ${h.spec.scaleTargetRef.name} is not rendered`);
    else if ("replicas" in d.spec)
      problems.push(`HPA ${h.metadata.name}: ${d.metadata.name} also sets spec.replicas, which fights the HPA`);
  }
  return problems;
}

/** A --values file (YAML or JSON); a file that cannot be used ends the run with exit 2. */
function readValuesFile(file) {
  let values;
  try {
    values = YAML.parse(readFileSync(file, "utf8")) ?? {};
  } catch (err) {
    console.error(`check.mjs: cannot read --values ${file}: ${err.message.split("\n")[0]}`);
    process.exit(2);
  }
  if (!isMap(values)) {
    console.error(`check.mjs: --values ${file} is not a map of values`);
    process.exit(2);
  }
  return values;
}

// `node deploy/check.mjs --values FILE` (no --render): FILE is checked as one more example.
if (YAML && valuesFile && !renderOnly)
  releaseCases.push({ name: `--values ${valuesFile}`, release: "meshwork", values: readValuesFile(valuesFile) });

// `node deploy/check.mjs --render [--values FILE]`: print the manifests and NOTES, check nothing.
// FILE goes over values.yaml the way `helm template -f FILE` does; without it, the first example.
if (renderOnly) {
  if (!YAML) {
    console.error("check.mjs: --render needs the `yaml` package");
    process.exit(1);
  }
  const values = valuesFile ? readValuesFile(valuesFile) : releaseCases[0].values;
  try {
    const r = renderChart({ release: valuesFile ? "meshwork" : releaseCases[0].release, values });
    process.stdout.write(`${r.manifests}\n# NOTES.txt (${r.renderer})\n${(r.notes ?? "").replace(/^/gm, "# ")}\n`);
    process.exit(0);
  } catch (err) {
    console.error(`check.mjs: the chart does not render: ${err.message}`);
    process.exit(1);
  }
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
  // Every value in values.yaml is read by some template in some example (or documented-only).
  {
    const used = new Set();
    const problems = [];
    for (const c of releaseCases) {
      try {
        renderChart(c, used);
      } catch (err) {
        problems.push(`${c.name}: ${err.message}`);
      }
    }
    const defaults = YAML.parse(readFileSync(join(chartDir, "values.yaml"), "utf8"));
    for (const leaf of leafPaths(defaults))
      if (!used.has(leaf) && !documentedOnlyValues.has(leaf))
        problems.push(`${leaf} is read by no template in any example (use it, drop it, or list it as documented-only)`);
    for (const leaf of documentedOnlyValues)
      if (used.has(leaf)) problems.push(`${leaf} is listed as documented-only but a template reads it`);
    check("every value in values.yaml is used by a template (rendered with gotpl.mjs, reads recorded)", problems);
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
