// tracking.v1.SystemService handlers: the root document, health, the sanitized status, the alert
// summary and demo seeding. The demo records and the seeding decision live in domain/seed-data.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import {
  AssetCreatedSchema,
  AssetDeletedSchema,
  DeviceCreatedSchema,
  DeviceDeletedSchema,
  DeviceUpdatedSchema,
  GeofenceCreatedSchema,
  GeofenceDeletedSchema,
} from "../../gen/tracking/v1/events_pb.js";
import { HealthReportSchema, type SystemService } from "../../gen/tracking/v1/system_pb.js";
import { planSeed, seedAssets, seedDevices, seedGeofences } from "./domain/seed-data.js";
import { toAsset, toDevice, toGeofence } from "./mappers/to-message.js";
import { AssetEntity, type AssetRow } from "./store/asset-entity.js";
import { DeviceEntity, type DeviceRow } from "./store/device-entity.js";
import { GeofenceEntity, type GeofenceRow } from "./store/geofence-entity.js";
import { countSeeded, lockSeeding } from "./store/seed-queries.js";
import { alertCounts } from "./store/summary-queries.js";
import type { Transaction } from "../runtime/outbox/index.js";
import type { TrackingDeps } from "./deps.js";

const serviceName = "meshwork-tracking";
// Read once: the version is the package's, whatever the process environment says.
const version = (createRequire(import.meta.url)("../../package.json") as { version: string }).version;

const links = {
  assets: "/api/assets",
  devices: "/api/devices",
  observations: "/api/observations",
  latestPositions: "/api/observations/latest-positions",
  observationHistory: "/api/observations/history",
  geofences: "/api/geofences",
  breaches: "/api/geofences/breaches",
  speedAlerts: "/api/speed-alerts",
  alertsSummary: "/api/alerts/summary",
  health: "/api/health",
  systemStatus: "/api/system/status",
  integrations: "/api/integrations",
  webhooks: "/api/webhooks/status",
  eventToken: "/api/events/token",
  events: "/api/events",
  me: "/api/auth/me",
};

interface SeedOutcome {
  alreadySeeded: boolean;
  resetPerformed: boolean;
  assetsCreated: number;
  devicesCreated: number;
  geofencesCreated: number;
  removedFenceIds: string[];
  createdFences: GeofenceRow[];
}

export function systemService(deps: TrackingDeps): ServiceImpl<typeof SystemService> {
  const check = (ok: boolean, detail: string | undefined) => ({ status: ok ? "Healthy" : "Unhealthy", detail });

  return {
    getServiceInfo() {
      return { service: serviceName, version, links };
    },

    async getHealth() {
      const [database, bus] = await Promise.all([deps.db.health(), deps.bus.health()]);
      const databaseKind = deps.db.mode === "embedded" ? "embedded PostgreSQL" : "PostgreSQL";
      const busKind = deps.bus.kind === "nats" ? "NATS JetStream" : "in-process bus";
      // A failing check names the dependency, not the driver's words: those can hold hosts and
      // ports, which a public health answer must not. The log has them.
      const checks = {
        database: database.ok ? check(true, database.detail ?? databaseKind) : check(false, `${databaseKind} unavailable`),
        bus: bus.ok ? check(true, bus.detail ?? busKind) : check(false, `${busKind} unavailable`),
      };
      const failing = Object.entries(checks).filter(([, c]) => c.status !== "Healthy");
      if (failing.length) {
        // A load balancer reads the status, so unhealthy must not be a 200 (see the proto comment);
        // the report rides along as a detail of the rpc's own output type, which the gateway
        // answers as the body of the 503.
        const summary = failing.map(([name, c]) => `${name}: ${c.detail}`).join("; ");
        deps.logger.warn({ checks, database: database.detail, bus: bus.detail }, "health check failed");
        const report = create(HealthReportSchema, { status: "Unhealthy", checks });
        throw new ConnectError(`unhealthy: ${summary}`, Code.Unavailable, undefined, [{ desc: HealthReportSchema, value: report }]);
      }
      return { status: "Healthy", checks };
    },

    getSystemStatus() {
      const { tracking } = deps.settings;
      return {
        service: serviceName,
        version,
        environment: deps.environment,
        database: deps.db.mode === "embedded" ? "embedded" : "postgresql",
        bus: deps.bus.kind,
        // Whether each feature is switched on here; every key is always present.
        features: {
          simulation: tracking.simulationEnabled,
          webhooks: deps.settings.webhooks.endpoints.length > 0,
          apiKeys: deps.settings.auth.apiKeys.length > 0,
          sseStream: true,
          integrations: true,
        },
        settings: {
          defaultSpeedThresholdKmh: String(tracking.defaultSpeedThresholdKmh),
          speedAlertCooldownMinutes: String(tracking.speedAlertCooldownMinutes),
          exportMaxRows: String(tracking.exportMaxRows),
        },
      };
    },

    async getAlertsSummary() {
      const { breaches, speedAlerts } = await alertCounts(deps.db.em());
      return {
        openBreaches: breaches.open,
        totalBreaches: breaches.total,
        openSpeedAlerts: speedAlerts.open,
        totalSpeedAlerts: speedAlerts.total,
        breachesLast24h: breaches.last24h,
        speedAlertsLast24h: speedAlerts.last24h,
      };
    },

    async seedDemoData(req) {
      // `reset` is REQUIRED in the contract; the interceptor has refused a request without it.
      const outcome = await deps.uow.run((tx) => seed(tx, req.reset === true));
      // Only after commit: the index must never hold a fence another reader cannot see.
      for (const id of outcome.removedFenceIds) deps.engine.removeGeofence(id);
      for (const row of outcome.createdFences) deps.engine.applyGeofence(row);
      const { removedFenceIds: _removed, createdFences: _created, ...answer } = outcome;
      return answer;
    },
  };
}

/** The whole seed in the caller's transaction; `tx` is the transaction's, nothing else is used. */
async function seed(tx: Transaction, reset: boolean): Promise<SeedOutcome> {
  const { em } = tx;
  await lockSeeding(em);
  const plan = planSeed({ seededRows: await countSeeded(em), reset });
  const outcome: SeedOutcome = {
    alreadySeeded: plan.alreadySeeded,
    resetPerformed: plan.resetPerformed,
    assetsCreated: 0,
    devicesCreated: 0,
    geofencesCreated: 0,
    removedFenceIds: [],
    createdFences: [],
  };
  if (plan.wipe) outcome.removedFenceIds = await wipeSeeded(tx);
  if (!plan.create) return outcome;

  const now = new Date();
  const assetIds = new Map<string, string>();
  for (const spec of seedAssets) {
    const { key, ...fields } = spec;
    const row: AssetRow = { id: randomUUID(), ...fields, isSeeded: true, createdAt: now, updatedAt: now };
    em.create(AssetEntity, row);
    tx.record(AssetCreatedSchema, { asset: toAsset(row) });
    assetIds.set(key, row.id);
    outcome.assetsCreated++;
  }
  // The entities declare no relations, so MikroORM cannot order the inserts: assets go first for
  // the devices' foreign key.
  await em.flush();

  // A user may own a demo identifier already; identifiers are unique, so that device is left as is.
  const taken = new Set(
    (await em.find(DeviceEntity, { identifier: { $in: seedDevices.map((d) => d.identifier) } })).map((d) => d.identifier),
  );
  for (const spec of seedDevices) {
    if (taken.has(spec.identifier)) continue;
    const row: DeviceRow = {
      id: randomUUID(),
      identifier: spec.identifier,
      label: spec.label,
      protocol: spec.protocol,
      assetId: assetIds.get(spec.assetKey) ?? null,
      provider: null,
      externalId: null,
      tags: spec.tags,
      integrationFeedId: null,
      lastSeenAt: null,
      isSeeded: true,
      createdAt: now,
      updatedAt: now,
    };
    em.create(DeviceEntity, row);
    tx.record(DeviceCreatedSchema, { device: toDevice(row) });
    outcome.devicesCreated++;
  }

  for (const spec of seedGeofences) {
    const row: GeofenceRow = { id: randomUUID(), ...spec, isActive: true, isSeeded: true, createdAt: now, updatedAt: now };
    em.create(GeofenceEntity, row);
    tx.record(GeofenceCreatedSchema, { geofence: toGeofence(row) });
    outcome.createdFences.push(row);
    outcome.geofencesCreated++;
  }
  return outcome;
}

/**
 * Removes every seeded row with its deleted event. User devices pointing at a seeded asset lose
 * the link (as the foreign key would do) with an updated event, so subscribers see it too.
 * Observations, breaches, alerts and fence state of seeded devices go with them (on delete cascade).
 * Returns the ids of the removed fences.
 */
async function wipeSeeded(tx: Transaction): Promise<string[]> {
  const { em } = tx;
  const assets = await em.find(AssetEntity, { isSeeded: true });
  const devices = await em.find(DeviceEntity, { isSeeded: true });
  const fences = await em.find(GeofenceEntity, { isSeeded: true });
  const seededAssetIds = assets.map((a) => a.id);
  if (seededAssetIds.length) {
    const now = new Date();
    for (const device of await em.find(DeviceEntity, { assetId: { $in: seededAssetIds }, isSeeded: false })) {
      em.assign(device, { assetId: null, updatedAt: now });
      tx.record(DeviceUpdatedSchema, { device: toDevice(device) });
    }
  }
  for (const row of fences) {
    tx.record(GeofenceDeletedSchema, { geofence: toGeofence(row) });
    em.remove(row);
  }
  for (const row of devices) {
    tx.record(DeviceDeletedSchema, { device: toDevice(row) });
    em.remove(row);
  }
  for (const row of assets) {
    tx.record(AssetDeletedSchema, { asset: toAsset(row) });
    em.remove(row);
  }
  // Deletes reach the database before the new rows, so the demo identifiers are free again.
  await em.flush();
  return fences.map((f) => f.id);
}
