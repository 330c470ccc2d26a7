// History as RFC 7946 GeoJSON: a FeatureCollection with a Point per observation and, after them,
// a LineString per device that has two or more points. Positions are [longitude, latitude] (plus
// altitude when known), as the RFC orders them, not the latitude-first order people speak in.
import type { TrackPoint, TrackWriter } from "../domain/track-point.js";

type Position = [number, number] | [number, number, number];

interface Track {
  readonly deviceId: string;
  readonly deviceIdentifier: string | null;
  readonly positions: Position[];
  /** A LineString mixes no 2D and 3D positions: altitude only when every point has one. */
  allHaveAltitude: boolean;
  readonly startedAt: Date;
  endedAt: Date;
}

function positionOf(p: TrackPoint): Position {
  return p.altitude === null ? [p.longitude, p.latitude] : [p.longitude, p.latitude, p.altitude];
}

export function createGeoJsonWriter(): TrackWriter {
  const points: string[] = [];
  // A Map keeps devices in the order their first point came, so the output is deterministic.
  const tracks = new Map<string, Track>();
  return {
    add(p) {
      const position = positionOf(p);
      points.push(
        JSON.stringify({
          type: "Feature",
          geometry: { type: "Point", coordinates: position },
          properties: {
            observationId: p.observationId,
            deviceId: p.deviceId,
            assetId: p.assetId,
            observedAt: p.observedAt.toISOString(),
            speedKmh: p.speedKmh,
            headingDegrees: p.headingDegrees,
            accuracyMeters: p.accuracyMeters,
          },
        }),
      );
      let track = tracks.get(p.deviceId);
      if (!track) {
        track = {
          deviceId: p.deviceId,
          deviceIdentifier: p.deviceIdentifier,
          positions: [],
          allHaveAltitude: true,
          startedAt: p.observedAt,
          endedAt: p.observedAt,
        };
        tracks.set(p.deviceId, track);
      }
      track.positions.push(position);
      track.allHaveAltitude &&= p.altitude !== null;
      track.endedAt = p.observedAt;
    },
    finish() {
      const features = points;
      for (const track of tracks.values()) {
        if (track.positions.length < 2) continue;
        const coordinates = track.allHaveAltitude ? track.positions : track.positions.map(([lon, lat]) => [lon, lat]);
        features.push(
          JSON.stringify({
            type: "Feature",
            geometry: { type: "LineString", coordinates },
            properties: {
              deviceId: track.deviceId,
              deviceIdentifier: track.deviceIdentifier,
              pointCount: track.positions.length,
              startedAt: track.startedAt.toISOString(),
              endedAt: track.endedAt.toISOString(),
            },
          }),
        );
      }
      return `{"type":"FeatureCollection","features":[${features.join(",")}]}`;
    },
  };
}
