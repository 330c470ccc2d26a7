// The Helm chart as CI sees it: `node deploy/check.mjs` passes, and the chart rendered through
// `node deploy/check.mjs --render --values FILE` (helm template when installed, else gotpl.mjs)
// with everything turned on parses as YAML and holds the objects issue 16 names. No cluster, no
// mesh: check.mjs and the renders are child processes, run once each and shared by the tests.
// The YAML parser is `yaml`, the one check.mjs uses (in node_modules through the OpenTelemetry SDK).
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import YAML from "yaml";

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: manifests are read field by field in the assertions
  spec?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}

const repoRoot = join(import.meta.dirname, "..", "..");
const dir = mkdtempSync(join(tmpdir(), "meshwork-chart-test-"));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["deploy/check.mjs", ...args], { cwd: repoRoot, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

function valuesFile(name: string, values: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, YAML.stringify(values));
  return file;
}

async function render(values: unknown, name: string): Promise<K8sObject[]> {
  const r = await run(["--render", "--values", valuesFile(name, values)]);
  if (r.code !== 0) throw new Error(`render failed (exit ${r.code}): ${r.stderr}`);
  const docs = YAML.parseAllDocuments(r.stdout);
  for (const d of docs) if (d.errors.length) throw new Error(`rendered YAML does not parse: ${d.errors[0]!.message}`);
  return docs.map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null);
}

const backends = { database: { existingSecret: "meshwork-db" }, nats: { url: "nats://meshwork:pw@nats:4222" } };
const workflow = JSON.stringify({ name: "smoke", steps: [{ prompt: "Say hi", expect: "hi" }] });
const everythingOn = {
  ...backends,
  image: { repository: "registry.example/meshwork", tag: "9.9.9" },
  podAnnotations: { "example.org/owner": "agents-team" },
  config: {
    data: { Gateway__Auth__Enabled: "true" },
    secretData: { OPENAI_API_KEY: "sk-test-not-a-real-key" },
  },
  telemetry: { enabled: true, otlpEndpoint: "http://otel-collector:4318", otlpProtocol: "http/protobuf", serviceName: "mw" },
  gateway: { image: { repository: "registry.example/gateway", tag: "g1" }, autoscaling: { enabled: true, minReplicas: 3, maxReplicas: 7 } },
  daemon: {
    image: { tag: "d1" },
    persistence: { enabled: true, size: "5Gi", storageClass: "fast-ssd" },
    podDisruptionBudget: { enabled: true },
  },
  interface: { enabled: true, port: 3100, image: { repository: "registry.example/ui", tag: "u1" } },
  ingress: {
    enabled: true,
    className: "nginx",
    annotations: { "nginx.ingress.kubernetes.io/affinity": "cookie" },
    hosts: [{ host: "agents.example.org", paths: [{ path: "/", pathType: "Prefix" }] }],
    tls: [{ secretName: "agents-tls", hosts: ["agents.example.org"] }],
  },
  workers: { enabled: true, replicaCount: 3 },
  job: { enabled: true, agent: "reviewer", workflow, backoffLimit: 2 },
};

// Started at load time, in parallel; each test awaits what it needs.
const checkRun = run([]);
const fullRender = render(everythingOn, "everything.yaml");
const defaultRender = render(backends, "defaults.yaml");

const find = (objects: K8sObject[], kind: string, name: string) => {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${kind} ${name} is not rendered; rendered: ${objects.map((x) => `${x.kind}/${x.metadata.name}`).join(", ")}`);
  return o;
};
const container = (o: K8sObject) => o.spec.template.spec.containers[0];
const env = (o: K8sObject): Record<string, EnvVar> => Object.fromEntries((container(o).env as EnvVar[]).map((e) => [e.name, e]));

test("node deploy/check.mjs passes", async (t) => {
  const r = await checkRun;
  t.is(r.code, 0, r.stdout + r.stderr);
  t.regex(r.stdout, /^ok {3}every value in values\.yaml is used by a template/m);
  t.regex(r.stdout, / 0 failed/);
});

test("check.mjs fails a values file with a setting name that does not exist", async (t) => {
  const r = await run(["--values", valuesFile("bad.yaml", { ...backends, config: { data: { Gateway__NoSuchSetting: "1" } } })]);
  t.is(r.code, 1);
  t.regex(r.stdout, /FAIL .*\n.*Gateway__NoSuchSetting is not an environment form/);
});

test("the gateway: its image, the service addresses, probes on the agent front, envFrom", async (t) => {
  const objects = await fullRender;
  const gateway = find(objects, "Deployment", "meshwork-gateway");
  const c = container(gateway);
  t.is(c.image, "registry.example/gateway:g1");
  t.deepEqual(c.args, ["gateway"]);
  t.false("replicas" in gateway.spec, "the HPA owns the replica count");
  const e = env(gateway);
  t.is(e.Services__Tracking__Address?.value, "http://meshwork-tracking:9090");
  t.is(e.Services__Protection__Address?.value, "http://meshwork-protection:9090");
  t.is(e.Services__Agents__Address?.value, "http://meshwork-daemon:9090");
  t.is(e.Gateway__Server__Port?.value, "18789");
  const agentsPort = c.ports.find((p: { name: string }) => p.name === "http-agents");
  t.is(agentsPort.containerPort, 18789);
  t.deepEqual(c.startupProbe.httpGet, { path: "/health/live", port: "http-agents" });
  t.deepEqual(c.livenessProbe.httpGet, { path: "/health/live", port: "http-agents" });
  t.deepEqual(c.readinessProbe.httpGet, { path: "/health/ready", port: "http-agents" });
  t.deepEqual(c.envFrom, [{ configMapRef: { name: "meshwork-env" } }, { secretRef: { name: "meshwork-env" } }]);
  t.is(find(objects, "ConfigMap", "meshwork-env").data?.Gateway__Auth__Enabled, "true");
  t.is(find(objects, "Secret", "meshwork-env").stringData?.OPENAI_API_KEY, "sk-test-not-a-real-key");

  const hpa = find(objects, "HorizontalPodAutoscaler", "meshwork-gateway");
  t.like(hpa.spec, { minReplicas: 3, maxReplicas: 7, scaleTargetRef: { kind: "Deployment", name: "meshwork-gateway" } });
  t.is(find(objects, "PodDisruptionBudget", "meshwork-gateway").spec.minAvailable, 1);
});

test("the ingress goes to the gateway Service's agents port", async (t) => {
  const objects = await fullRender;
  const ingress = find(objects, "Ingress", "meshwork-gateway");
  t.is(ingress.spec.ingressClassName, "nginx");
  t.is(ingress.metadata.annotations?.["nginx.ingress.kubernetes.io/affinity"], "cookie");
  t.deepEqual(ingress.spec.tls, [{ secretName: "agents-tls", hosts: ["agents.example.org"] }]);
  const [rule] = ingress.spec.rules;
  t.is(rule.host, "agents.example.org");
  t.deepEqual(rule.http.paths, [
    { path: "/", pathType: "Prefix", backend: { service: { name: "meshwork-gateway", port: { name: "http-agents" } } } },
  ]);
  const service = find(objects, "Service", "meshwork-gateway");
  const port = service.spec.ports.find((p: { name: string }) => p.name === "http-agents");
  t.like(port, { port: 18789, targetPort: "http-agents" });
});

test("the daemon: app-daemon run serve agents, /health on Daemon:HealthPort, the PVC at $HOME/.app", async (t) => {
  const objects = await fullRender;
  const daemon = find(objects, "Deployment", "meshwork-daemon");
  const c = container(daemon);
  t.is(c.image, "registry.example/meshwork:d1", "an empty daemon.image.repository falls back to image.repository");
  t.deepEqual(c.command, ["node", "bin/app-daemon.js"]);
  t.deepEqual(c.args, ["run", "serve", "agents"]);
  const e = env(daemon);
  t.is(e.Daemon__HealthPort?.value, "18790");
  t.is(e.Services__Host?.value, "0.0.0.0");
  t.is(e.Updates__AutoApply?.value, "false");
  t.is(e.Workers__Enabled?.value, "true", "with workers on, the daemon queues its turns");
  t.is(e.DATABASE_URL?.valueFrom?.secretKeyRef?.name, "meshwork-db");
  for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"])
    t.deepEqual(c[probe].httpGet, { path: "/health", port: "http-health" }, probe);
  t.is(c.ports.find((p: { name: string }) => p.name === "http-health").containerPort, 18790);

  const home = e.HOME?.value;
  t.truthy(home);
  const mount = c.volumeMounts.find((m: { mountPath: string }) => m.mountPath === `${home}/.app`);
  t.truthy(mount, "a volume is mounted at $HOME/.app");
  const volume = daemon.spec.template.spec.volumes.find((v: { name: string }) => v.name === mount.name);
  t.deepEqual(volume.persistentVolumeClaim, { claimName: "meshwork-daemon" });
  t.is(daemon.spec.strategy.type, "Recreate", "a ReadWriteOnce claim cannot be held by the old and new pod at once");
  const pvc = find(objects, "PersistentVolumeClaim", "meshwork-daemon");
  t.deepEqual(pvc.spec.accessModes, ["ReadWriteOnce"]);
  t.is(pvc.spec.storageClassName, "fast-ssd");
  t.is(pvc.spec.resources.requests.storage, "5Gi");
  t.is(find(objects, "PodDisruptionBudget", "meshwork-daemon").spec.minAvailable, 1);

  const service = find(objects, "Service", "meshwork-daemon");
  t.like(service.spec.ports[0], { port: 9090, targetPort: "grpc" });
});

test("protection runs like tracking: Deployment + Service, meshwork serve protection", async (t) => {
  const objects = await fullRender;
  for (const name of ["tracking", "protection"]) {
    const d = find(objects, "Deployment", `meshwork-${name}`);
    t.deepEqual(container(d).args, ["serve", name]);
    t.deepEqual(container(d).readinessProbe.grpc, { port: 9090 });
    t.is(find(objects, "Service", `meshwork-${name}`).spec.ports[0].port, 9090);
    t.falsy(container(d).envFrom, "provider keys and bot tokens stay out of the mesh services");
  }
});

test("workers: meshwork worker with the Workers settings, replicas as asked", async (t) => {
  const objects = await fullRender;
  const workers = find(objects, "Deployment", "meshwork-workers");
  t.is(workers.spec.replicas, 3);
  t.deepEqual(container(workers).args, ["worker"]);
  const e = env(workers);
  t.is(e.Workers__Transport?.value, "nats");
  t.is(e.Workers__StreamKey?.value, "AGENT_WORK");
  t.is(e.Workers__ConsumerGroup?.value, "agent-workers");
  t.is(e.NATS_URL?.valueFrom?.secretKeyRef?.name, "meshwork-nats");
});

test("the job: meshwork job --agent --workflow from a ConfigMap, restartPolicy Never, backoffLimit", async (t) => {
  const objects = await fullRender;
  const job = find(objects, "Job", "meshwork-job-1");
  t.is(job.spec.backoffLimit, 2);
  const pod = job.spec.template.spec;
  t.is(pod.restartPolicy, "Never");
  const c = pod.containers[0];
  const args: string[] = c.args;
  t.is(args[0], "job");
  t.is(args[args.indexOf("--agent") + 1], "reviewer");
  const file = args[args.indexOf("--workflow") + 1]!;
  const mount = c.volumeMounts.find((m: { mountPath: string }) => file.startsWith(`${m.mountPath}/`));
  const volume = pod.volumes.find((v: { name: string }) => v.name === mount.name);
  const configMap = find(objects, "ConfigMap", volume.configMap.name);
  t.deepEqual(JSON.parse(configMap.data![file.slice(mount.mountPath.length + 1)]!), JSON.parse(workflow));
});

test("the interface: a web UI Deployment and Service on interface.port", async (t) => {
  const objects = await fullRender;
  const ui = find(objects, "Deployment", "meshwork-interface");
  const c = container(ui);
  t.is(c.image, "registry.example/ui:u1");
  t.is(env(ui).PORT?.value, "3100");
  t.like(find(objects, "Service", "meshwork-interface").spec.ports[0], { port: 3100, targetPort: "http" });
});

test("telemetry on: OTEL_* on every Meshwork pod; podAnnotations on every pod", async (t) => {
  const objects = await fullRender;
  const workloads = objects.filter((o) => o.kind === "Deployment" || o.kind === "Job");
  t.is(workloads.length, 7);
  for (const w of workloads) {
    t.is(w.spec.template.metadata.annotations?.["example.org/owner"], "agents-team", `${w.kind} ${w.metadata.name}`);
    if (w.metadata.name === "meshwork-interface") continue;
    const e = env(w);
    t.is(e.OTEL_EXPORTER_OTLP_ENDPOINT?.value, "http://otel-collector:4318", w.metadata.name);
    t.is(e.OTEL_EXPORTER_OTLP_PROTOCOL?.value, "http/protobuf", w.metadata.name);
    t.regex(e.OTEL_SERVICE_NAME?.value ?? "", /^mw-/, w.metadata.name);
    t.false("OTEL_SDK_DISABLED" in e, w.metadata.name);
  }
});

test("defaults: telemetry off (OTEL_SDK_DISABLED), emptyDir for the daemon, optional parts absent", async (t) => {
  const objects = await defaultRender;
  const kinds = new Set(objects.map((o) => o.kind));
  for (const absent of ["Ingress", "Job", "PersistentVolumeClaim", "HorizontalPodAutoscaler"]) t.false(kinds.has(absent), absent);
  t.false(objects.some((o) => o.metadata.name === "meshwork-workers" || o.metadata.name === "meshwork-interface"));
  for (const name of ["gateway", "daemon", "tracking", "protection"]) {
    const d = find(objects, "Deployment", `meshwork-${name}`);
    t.is(env(d).OTEL_SDK_DISABLED?.value, "true", name);
    t.false("OTEL_EXPORTER_OTLP_ENDPOINT" in env(d), name);
    t.falsy(container(d).envFrom, `${name}: no config.data, no envFrom`);
  }
  const daemon = find(objects, "Deployment", "meshwork-daemon");
  const home = env(daemon).HOME?.value;
  const mount = container(daemon).volumeMounts.find((m: { mountPath: string }) => m.mountPath === `${home}/.app`);
  const volume = daemon.spec.template.spec.volumes.find((v: { name: string }) => v.name === mount.name);
  t.deepEqual(volume.emptyDir, {});
  t.is(daemon.spec.strategy.type, "RollingUpdate");
  t.false("Workers__Enabled" in env(daemon));
  t.is(container(daemon).image, "meshwork:0.1.0", "no image values: image.repository and the chart's appVersion");
});

test("the chart refuses a job without an agent and a ReadWriteOnce daemon volume shared by two replicas", async (t) => {
  const noAgent = await run(["--render", "--values", valuesFile("no-agent.yaml", { ...backends, job: { enabled: true, workflow } })]);
  t.is(noAgent.code, 1);
  t.regex(noAgent.stderr, /job\.agent is required/);
  const shared = await run([
    "--render",
    "--values",
    valuesFile("rwo.yaml", { ...backends, daemon: { replicaCount: 2, persistence: { enabled: true } } }),
  ]);
  t.is(shared.code, 1);
  t.regex(shared.stderr, /ReadWriteMany/);
});
