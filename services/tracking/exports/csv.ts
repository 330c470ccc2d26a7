// RFC 4180 CSV: CRLF line ends, a header row, and fields quoted when they hold a comma, a
// quote, CR or LF (quotes doubled). null and undefined are empty fields.
export type CsvValue = string | number | boolean | Date | null | undefined;

function field(value: CsvValue): string {
  if (value === null || value === undefined) return "";
  const text = value instanceof Date ? value.toISOString() : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function toCsv(header: readonly string[], rows: Iterable<readonly CsvValue[]>): string {
  const lines = [header.map(field).join(",")];
  for (const row of rows) lines.push(row.map(field).join(","));
  return `${lines.join("\r\n")}\r\n`;
}
