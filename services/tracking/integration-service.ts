// tracking.v1.IntegrationService handlers: the provider list, feed CRUD with masked secrets, and
// feed observations, which find or create the tracker's device and then go through the same
// observation engine as POST /api/observations/ingest. Rules live in domain/integration-*.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { ForeignKeyConstraintViolationException, UniqueConstraintViolationException } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import { randomUUID } from "node:crypto";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  DeviceCreatedSchema,
  DeviceUpdatedSchema,
  IntegrationFeedCreatedSchema,
  IntegrationFeedDeletedSchema,
  IntegrationFeedUpdatedSchema,
} from "../../gen/tracking/v1/events_pb.js";
import type { FeedObservationInput, IntegrationService } from "../../gen/tracking/v1/integration_pb.js";
import { invalidArgument, notFound, requireUuid, unprocessable } from "../runtime/errors/index.js";
import type { Transaction } from "../runtime/outbox/index.js";
import type { TrackingDeps } from "./deps.js";
import {
  checkFeedInput,
  checkFeedObservation,
  configurationToStore,
  createdDeviceTags,
  feedDeviceIdentifier,
  observationField,
  type FeedFields,
  type FeedInputLike,
} from "./domain/integration-feed-rules.js";
import { integrationProviders } from "./domain/integration-providers.js";
import { checkObservation } from "./domain/observation-rules.js";
import type { ObservationInputLike } from "./domain/observation-types.js";
import { toIntegrationFeed } from "./mappers/to-integration-feed.js";
import { toDevice, toObservation } from "./mappers/to-message.js";
import { AssetEntity } from "./store/asset-entity.js";
import { DeviceEntity, type DeviceRow } from "./store/device-entity.js";
import { IntegrationFeedEntity, type IntegrationFeedRow } from "./store/integration-feed-entity.js";

export function integrationService(deps: TrackingDeps): ServiceImpl<typeof IntegrationService> {
  /**
   * A change that writes a feed's configuration. The driver's exceptions quote the statement with
   * its parameters, configuration included, and the error interceptor logs what it is given: such
   * a failure is replaced by one that names only its kind and SQL state.
   */
  async function feedChange<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    try {
      return await deps.uow.run(work);
    } catch (err) {
      if (err instanceof ConnectError) throw err;
      const e = err as { name?: unknown; code?: unknown } | null;
      throw new Error(`integration feed write failed (${String(e?.name ?? "error")}${e?.code ? `, SQL state ${String(e.code)}` : ""})`);
    }
  }

  /** The feed's device for this tracker, created when the feed allows it; see the contract. */
  async function deviceFor(
    feed: IntegrationFeedRow & { provider: string },
    extras: ReturnType<typeof checkFeedObservation>,
  ): Promise<{ device: DeviceRow; created: boolean }> {
    const identifier = feedDeviceIdentifier(feed.provider, extras.externalTrackerId);
    const existing = await deps.db.em().findOne(DeviceEntity, { identifier });
    if (existing) return { device: existing, created: false };
    if (!feed.autoCreateDevices) {
      throw invalidArgument([
        {
          field: observationField("external_tracker_id"),
          description: "no device is known for this tracker, and the feed does not create devices (autoCreateDevices is false)",
        },
      ]);
    }
    const tags = createdDeviceTags(feed.defaultTags, extras.tags);
    if (tags.malformed.length) throw invalidArgument(tags.malformed);
    const now = new Date();
    const device: DeviceRow = {
      id: randomUUID(),
      identifier,
      label: extras.label,
      protocol: null,
      assetId: extras.assetId,
      provider: feed.provider,
      externalId: extras.externalTrackerId,
      tags: tags.tags,
      integrationFeedId: feed.id,
      lastSeenAt: null,
      isSeeded: false,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await deps.uow.run(async (tx) => {
        if (device.assetId && !(await tx.em.count(AssetEntity, { id: device.assetId }))) {
          throw missingAsset(device.assetId);
        }
        tx.em.create(DeviceEntity, device);
        tx.record(DeviceCreatedSchema, { device: toDevice(device) });
      });
      return { device, created: true };
    } catch (err) {
      // Two observations of a new tracker at once: the identifier index lets one create it.
      if (err instanceof UniqueConstraintViolationException) {
        const raced = await deps.db.em().findOne(DeviceEntity, { identifier });
        if (raced) return { device: raced, created: false };
      }
      // The feed or the asset was deleted between the checks and the insert.
      if (err instanceof ForeignKeyConstraintViolationException) {
        throw notFound(`integration feed ${feed.id} or asset ${device.assetId ?? "-"} no longer exists`);
      }
      throw err;
    }
  }

  return {
    listProviders() {
      return { items: integrationProviders.map((p) => ({ ...p })) };
    },

    async listFeeds() {
      const rows = await deps.db.em().find(IntegrationFeedEntity, {}, { orderBy: { createdAt: "desc", id: "desc" } });
      return { items: rows.map(toIntegrationFeed) };
    },

    async createFeed(req) {
      const { fields, provider } = checkedFeed(req.feed, true);
      const configuration = configurationToStore(fields.configuration, null);
      if (configuration.malformed.length) throw invalidArgument(configuration.malformed);
      const now = new Date();
      const row: IntegrationFeedRow = {
        id: randomUUID(),
        ...storedFields(fields),
        provider,
        configurationJson: configuration.text,
        createdAt: now,
        updatedAt: now,
      };
      await feedChange(async (tx) => {
        tx.em.create(IntegrationFeedEntity, row);
        tx.record(IntegrationFeedCreatedSchema, { integrationFeed: toIntegrationFeed(row) });
      });
      return toIntegrationFeed(row);
    },

    async updateFeed(req) {
      const id = requireUuid("id", req.id);
      const { fields } = checkedFeed(req.feed, false);
      const row = await feedChange(async (tx) => {
        const found = await loadFeed(tx.em, id);
        // Masks sent back stand for what is stored now, read in this transaction.
        const configuration = configurationToStore(fields.configuration, found.configurationJson);
        if (configuration.malformed.length) throw invalidArgument(configuration.malformed);
        tx.em.assign(found, { ...storedFields(fields), configurationJson: configuration.text, updatedAt: new Date() });
        tx.record(IntegrationFeedUpdatedSchema, { integrationFeed: toIntegrationFeed(found) });
        return found;
      });
      return toIntegrationFeed(row);
    },

    async deleteFeed(req) {
      const id = requireUuid("id", req.id);
      const unlinked = await deps.uow.run(async (tx) => {
        const found = await loadFeed(tx.em, id);
        // The foreign key would null the links by itself (ON DELETE SET NULL); doing it here as
        // well gives every unlinked device its device.updated event and a new updatedAt.
        const devices = await tx.em.find(DeviceEntity, { integrationFeedId: id });
        const now = new Date();
        for (const device of devices) {
          tx.em.assign(device, { integrationFeedId: null, updatedAt: now });
          tx.record(DeviceUpdatedSchema, { device: toDevice(device) });
        }
        tx.record(IntegrationFeedDeletedSchema, { integrationFeed: toIntegrationFeed(found) });
        tx.em.remove(found);
        return devices.length;
      });
      return { id, deleted: true, unlinkedDevices: unlinked };
    },

    async recordFeedObservation(req) {
      const feedId = requireUuid("id", req.id);
      const body = req.observation;
      if (!body) throw invalidArgument([{ field: "observation", description: "is required" }], "request body is required");
      const extras = checkFeedObservation(body);
      const position = positionOf(body);
      // The position rules run before anything is written, so a refused fix creates no device.
      // The identifier here only satisfies the device rule; the real one depends on the feed.
      const check = checkObservation(
        { ...position, deviceIdentifier: "feed" },
        { now: new Date(), resolveIdentifier: true, prefix: "observation." },
      );
      const malformed = [...extras.malformed, ...check.malformed];
      if (malformed.length) throw invalidArgument(malformed);

      const feed = await loadFeed(deps.db.em(), feedId);
      if (!feed.isEnabled) {
        throw new ConnectError(
          `integration feed ${feedId} is disabled (isEnabled is false): it refuses observations`,
          Code.FailedPrecondition,
        );
      }
      if (!feed.provider) {
        throw new ConnectError(`integration feed ${feedId} has no provider, so its trackers cannot be named`, Code.FailedPrecondition);
      }
      if (check.semantic.length) throw unprocessable(check.semantic);

      const { device, created } = await deviceFor({ ...feed, provider: feed.provider }, extras);
      const result = await deps.engine.record({ ...position, deviceId: device.id }, { source: "integration", resolveIdentifier: false });
      return {
        feedId,
        deviceId: device.id,
        deviceIdentifier: device.identifier ?? feedDeviceIdentifier(feed.provider, extras.externalTrackerId),
        createdDevice: created,
        observation: toObservation(result.observation),
        duplicate: result.duplicate,
      };
    },
  };
}

function checkedFeed(input: FeedInputLike | undefined, withProvider: boolean): { fields: FeedFields; provider: string | null } {
  if (!input) throw invalidArgument([{ field: "feed", description: "is required" }], "request body is required");
  const { fields, provider, malformed } = checkFeedInput(input, { withProvider });
  if (malformed.length) throw invalidArgument(malformed);
  return { fields, provider };
}

/** The columns a body sets directly (the configuration goes through configurationToStore). */
function storedFields(fields: FeedFields) {
  return { name: fields.name, isEnabled: fields.isEnabled, autoCreateDevices: fields.autoCreateDevices, defaultTags: fields.defaultTags };
}

/** The ingest fields of a feed observation, as the observation engine takes them. */
function positionOf(body: FeedObservationInput): ObservationInputLike {
  return {
    observedAt: body.observedAt,
    latitude: body.latitude,
    longitude: body.longitude,
    altitude: body.altitude,
    accuracyMeters: body.accuracyMeters,
    speedKmh: body.speedKmh,
    headingDegrees: body.headingDegrees,
    metadata: body.metadata,
  };
}

/** NotFound that names the field, as the device service answers an unknown assetId. */
function missingAsset(assetId: string): ConnectError {
  const detail = create(BadRequestSchema, {
    fieldViolations: [{ field: observationField("asset_id"), description: "does not name an existing record" }],
  });
  return new ConnectError(`asset ${assetId} not found`, Code.NotFound, undefined, [{ desc: BadRequestSchema, value: detail }]);
}

async function loadFeed(em: EntityManager, id: string): Promise<IntegrationFeedRow> {
  const row = await em.findOne(IntegrationFeedEntity, { id });
  if (!row) throw notFound(`integration feed ${id} not found`);
  return row;
}
