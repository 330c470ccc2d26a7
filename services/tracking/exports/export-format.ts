// The file formats a list can be exported in, their media types and download names. Pure: the
// handlers turn an unknown format into a 400 and set the headers.
export type FileFormat = "csv" | "geojson" | "gpx";
export type ExportFormat = "json" | FileFormat;

export interface FileType {
  readonly contentType: string;
  readonly extension: string;
}

// RFC 7946 registers application/geo+json; GPX's own media type is application/gpx+xml.
export const fileTypes: Readonly<Record<FileFormat, FileType>> = {
  csv: { contentType: "text/csv; charset=utf-8", extension: "csv" },
  geojson: { contentType: "application/geo+json", extension: "geojson" },
  gpx: { contentType: "application/gpx+xml", extension: "gpx" },
};

/**
 * The format a client asked for, json when absent or empty, undefined when it is not one of
 * `allowed`. Case does not matter: `CSV` is csv.
 */
export function parseExportFormat<F extends ExportFormat>(value: string | undefined, allowed: readonly F[]): F | undefined {
  const wanted = (value ?? "").trim().toLowerCase() || "json";
  return allowed.find((f) => f === wanted);
}

/** The description of a format violation, naming every allowed value. */
export function formatViolation(allowed: readonly ExportFormat[]): string {
  return `must be one of ${allowed.join(", ")}`;
}

/** `<prefix>-yyyymmdd-hhmmss.<ext>` in UTC, so names sort by time and carry no separators a shell minds. */
export function exportFileName(prefix: string, extension: string, at: Date): string {
  const stamp = at
    .toISOString()
    .replace(/\.\d{3}Z$/, "")
    .replaceAll("-", "")
    .replaceAll(":", "")
    .replace("T", "-");
  return `${prefix}-${stamp}.${extension}`;
}

/** A Content-Disposition that makes browsers save the file; names are ASCII, so no RFC 6266 filename*. */
export function attachment(fileName: string): string {
  return `attachment; filename="${fileName.replaceAll(/["\\\r\n]/g, "_")}"`;
}
