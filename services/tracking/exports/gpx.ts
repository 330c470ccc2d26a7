// History as GPX 1.1: one <trk> per device (named by its identifier, else its id) holding one
// <trkseg> of points in time order. Text and attributes are escaped; characters XML 1.0 cannot
// carry at all (most C0 controls) become U+FFFD rather than an unreadable file.
import type { TrackPoint, TrackWriter } from "../domain/track-point.js";

export const GPX_NAMESPACE = "http://www.topografix.com/GPX/1/1";

// Legal XML 1.0 characters are tab, LF, CR, U+0020-U+D7FF, U+E000-U+FFFD and the astral planes;
// a lone surrogate is not a character either.
const ILLEGAL_XML = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

const ENTITIES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&apos;",
};

/** Safe as element text and as a double- or single-quoted attribute value. */
export function escapeXml(text: string): string {
  return text.replace(ILLEGAL_XML, "\uFFFD").replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** xsd:decimal has no exponent, which String(1e-7) would write. */
export function xsdDecimal(value: number): string {
  const text = String(value);
  if (!/e/i.test(text)) return text;
  return value.toFixed(20).replace(/\.?0+$/, "");
}

interface Track {
  readonly name: string;
  readonly points: string[];
}

function trackPoint(p: TrackPoint): string {
  // GPX fixes the child order: ele before time.
  const ele = p.altitude === null ? "" : `<ele>${xsdDecimal(p.altitude)}</ele>`;
  return `<trkpt lat="${xsdDecimal(p.latitude)}" lon="${xsdDecimal(p.longitude)}">${ele}<time>${p.observedAt.toISOString()}</time></trkpt>`;
}

export function createGpxWriter(creator = "Meshwork"): TrackWriter {
  const tracks = new Map<string, Track>();
  return {
    add(p) {
      let track = tracks.get(p.deviceId);
      if (!track) {
        track = { name: p.deviceIdentifier ?? p.deviceId, points: [] };
        tracks.set(p.deviceId, track);
      }
      track.points.push(trackPoint(p));
    },
    finish() {
      const parts = [
        '<?xml version="1.0" encoding="UTF-8"?>\n',
        `<gpx version="1.1" creator="${escapeXml(creator)}" xmlns="${GPX_NAMESPACE}">\n`,
      ];
      for (const track of tracks.values()) {
        parts.push(`<trk><name>${escapeXml(track.name)}</name><trkseg>\n`);
        for (const point of track.points) parts.push(point, "\n");
        parts.push("</trkseg></trk>\n");
      }
      parts.push("</gpx>\n");
      return parts.join("");
    },
  };
}
