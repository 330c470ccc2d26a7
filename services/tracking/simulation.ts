// ObservationService.SimulateObservations: runs a demo preset through the observation engine, so
// simulated points meet exactly the rules real ones do. The presets themselves are pure data in
// domain/simulation-presets.ts.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { UniqueConstraintViolationException } from "@mikro-orm/core";
import { randomUUID } from "node:crypto";
import { AssetCreatedSchema, DeviceCreatedSchema, GeofenceCreatedSchema, GeofenceUpdatedSchema } from "../../gen/tracking/v1/events_pb.js";
import { ObservationInputSchema, type ObservationService } from "../../gen/tracking/v1/observation_pb.js";
import { invalidArgument } from "../runtime/errors/index.js";
import {
  findPreset,
  planRunTiming,
  pointIntervalSeconds,
  simulationPresets,
  type SimulatedFence,
  type SimulationPreset,
} from "./domain/simulation-presets.js";
import { toAsset, toDevice, toGeofence } from "./mappers/to-message.js";
import { AssetEntity, type AssetRow } from "./store/asset-entity.js";
import { DeviceEntity, type DeviceRow } from "./store/device-entity.js";
import { GeofenceEntity, type GeofenceRow } from "./store/geofence-entity.js";
import { newestObservedAt } from "./store/observation-queries.js";
import type { TrackingDeps } from "./deps.js";

/** Same bound the Device body has for identifiers. */
const maxIdentifierLength = 200;
/**
 * The simulator's own assets carry the reference default explicitly, so SpeedViolation shows a
 * violation even where the service default threshold has been raised.
 */
const simulatedAssetThresholdKmh = 120;

export function observationSimulation(deps: TrackingDeps): Pick<ServiceImpl<typeof ObservationService>, "simulateObservations"> {
  /**
   * Runs take turns. Two GeofenceEntryExit runs at once would put two identical fences on the map
   * and each device would cross both (4 breaches instead of the reference's 2); two runs on one
   * device would plan the same timestamps. A run takes well under a second, so a queue costs
   * nothing. It orders runs within one instance; runs on different instances can still overlap.
   */
  let previousRun: Promise<unknown> = Promise.resolve();
  function oneRunAtATime<T>(work: () => Promise<T>): Promise<T> {
    const next = previousRun.then(work, work);
    previousRun = next.catch(() => undefined);
    return next;
  }

  /** The device named by `identifier`, created (with an asset of its own) when missing. */
  async function ensureDevice(identifier: string, log: string[]): Promise<DeviceRow> {
    const existing = await deps.db.em().findOne(DeviceEntity, { identifier });
    if (existing) {
      log.push(`Using device ${identifier} (${existing.id})`);
      return existing;
    }
    const now = new Date();
    const asset: AssetRow = {
      id: randomUUID(),
      name: `Simulated vehicle (${identifier})`,
      description: "Created by POST /api/observations/simulate.",
      category: "vehicle",
      speedThresholdKmh: simulatedAssetThresholdKmh,
      isSeeded: false,
      createdAt: now,
      updatedAt: now,
    };
    const device: DeviceRow = {
      id: randomUUID(),
      identifier,
      label: `Simulator ${identifier}`,
      protocol: "simulation",
      assetId: asset.id,
      provider: "simulator",
      externalId: null,
      tags: "simulation",
      integrationFeedId: null,
      lastSeenAt: null,
      isSeeded: false,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await deps.uow.run(async (tx) => {
        tx.em.create(AssetEntity, asset);
        // No declared relation orders the inserts: the asset must exist for the device's foreign key.
        await tx.em.flush();
        tx.em.create(DeviceEntity, device);
        tx.record(AssetCreatedSchema, { asset: toAsset(asset) });
        tx.record(DeviceCreatedSchema, { device: toDevice(device) });
      });
    } catch (err) {
      // A concurrent run created the same identifier first: use its device.
      if (!(err instanceof UniqueConstraintViolationException)) throw err;
      const raced = await deps.db.em().findOne(DeviceEntity, { identifier });
      if (!raced) throw err;
      log.push(`Using device ${identifier} (${raced.id})`);
      return raced;
    }
    log.push(`Created asset "${asset.name}" (${asset.id}) with a ${simulatedAssetThresholdKmh} km/h threshold`);
    log.push(`Created device ${identifier} (${device.id})`);
    return device;
  }

  /** The newest time the device was seen at, stored or remembered on the device. */
  async function newestSeen(device: DeviceRow): Promise<Date | null> {
    const stored = await newestObservedAt(deps.db.em(), device.id);
    const seen = device.lastSeenAt;
    if (!stored) return seen;
    return seen && seen > stored ? seen : stored;
  }

  async function createFence(spec: SimulatedFence): Promise<GeofenceRow> {
    const now = new Date();
    const row: GeofenceRow = { id: randomUUID(), ...spec, isActive: true, isSeeded: false, createdAt: now, updatedAt: now };
    await deps.uow.run(async (tx) => {
      tx.em.create(GeofenceEntity, row);
      tx.record(GeofenceCreatedSchema, { geofence: toGeofence(row) });
    });
    deps.engine.applyGeofence(row);
    return row;
  }

  /** Turns the run's fence off; a fence someone deleted meanwhile is left alone. */
  async function deactivateFence(id: string): Promise<GeofenceRow | null> {
    const row = await deps.uow.run(async (tx) => {
      const found = await tx.em.findOne(GeofenceEntity, { id });
      if (!found) return null;
      tx.em.assign(found, { isActive: false, updatedAt: new Date() });
      tx.record(GeofenceUpdatedSchema, { geofence: toGeofence(found) });
      return found;
    });
    if (row) deps.engine.applyGeofence(row);
    return row;
  }

  async function run(preset: SimulationPreset, device: DeviceRow, log: string[]) {
    const timing = planRunTiming(new Date(), await newestSeen(device), preset.points.length);
    if (!timing.inOrder) {
      log.push("The device has newer observations than this run: its points are stored but move no geofence state");
    }
    const fence = preset.fence ? await createFence(preset.fence) : undefined;
    if (fence) {
      log.push(
        `Created temporary geofence "${fence.name}" (${fence.id}) at ${fence.centerLatitude.toFixed(4)},${fence.centerLongitude.toFixed(4)}, radius ${fence.radiusMeters} m`,
      );
    }
    const totals = { observationsCreated: 0, speedAlertsTriggered: 0, geofenceBreaches: 0 };
    try {
      for (const [i, point] of preset.points.entries()) {
        const observedAt = new Date(timing.start.getTime() + point.offsetSeconds * 1000);
        const input = create(ObservationInputSchema, {
          deviceId: device.id,
          observedAt: timestampFromDate(observedAt),
          latitude: point.latitude,
          longitude: point.longitude,
          accuracyMeters: point.accuracyMeters,
          speedKmh: point.speedKmh,
          headingDegrees: point.headingDegrees,
          metadata: JSON.stringify({ simulation: preset.name, point: i + 1 }),
        });
        const result = await deps.engine.record(input, { source: "simulation", resolveIdentifier: false });
        let line = `#${i + 1} ${observedAt.toISOString()} ${point.latitude.toFixed(6)},${point.longitude.toFixed(6)} at ${point.speedKmh} km/h`;
        if (result.duplicate) {
          log.push(`${line}: duplicate of ${result.observation.id}, skipped`);
          continue;
        }
        totals.observationsCreated++;
        for (const alert of result.speedAlerts) {
          totals.speedAlertsTriggered++;
          line += `; speed alert ${alert.id} (over ${alert.thresholdKmh} km/h)`;
        }
        for (const breach of result.breaches) {
          totals.geofenceBreaches++;
          const name = breach.geofenceId === fence?.id ? `"${fence.name}"` : `geofence ${breach.geofenceId}`;
          line += `; ${breach.breachEventType} ${name} (breach ${breach.id})`;
        }
        log.push(line);
      }
    } finally {
      // Even a failed run must not leave its fence catching real devices.
      if (fence && (await deactivateFence(fence.id))) log.push(`Deactivated temporary geofence "${fence.name}" (${fence.id})`);
    }
    const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
    log.push(
      `${preset.name}: ${count(totals.observationsCreated, "observation")}, ${count(totals.speedAlertsTriggered, "speed alert")}, ${count(totals.geofenceBreaches, "geofence breach", "geofence breaches")}`,
    );
    return totals;
  }

  return {
    async simulateObservations(req) {
      if (!deps.settings.tracking.simulationEnabled) {
        throw new ConnectError("simulation is disabled by configuration (Tracking:SimulationEnabled)", Code.PermissionDenied);
      }
      const preset = findPreset(req.preset);
      if (!preset) {
        const allowed = simulationPresets.map((p) => `${p.preset} (${p.name})`).join(", ");
        throw invalidArgument([{ field: "preset", description: `must be one of ${allowed}` }]);
      }
      const identifier = req.deviceIdentifier?.trim() || preset.defaultIdentifier;
      if (identifier.length > maxIdentifierLength) {
        throw invalidArgument([{ field: "device_identifier", description: `must be at most ${maxIdentifierLength} characters` }]);
      }
      const eventLog = [`${preset.name} (preset ${preset.preset}): ${preset.points.length} points, ${pointIntervalSeconds} s apart`];
      const device = await ensureDevice(identifier, eventLog);
      const totals = await oneRunAtATime(() => run(preset, device, eventLog));
      return {
        ...totals,
        deviceId: device.id,
        deviceIdentifier: identifier,
        assetId: device.assetId ?? undefined,
        eventLog,
      };
    },
  };
}
