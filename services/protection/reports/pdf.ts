// The protection report as a PDF (pdfkit, its built-in Helvetica): title, period, totals, a bar
// chart of blocks per bucket and a table of devices. The text stays text, so pdftotext and
// pdf.js read it back.
import PDFDocument from "pdfkit";
import { type TimeseriesInterval, type TimeseriesPoint, utcText } from "./buckets.js";

export interface ReportDevice {
  hostname: string;
  blocks: number;
  tamper_alerts: number;
}

export interface ProtectionReportInput {
  period: { from: Date; to: Date; interval: TimeseriesInterval };
  totals: { blocks: number; tamper_alerts: number; devices: number };
  series: readonly TimeseriesPoint[];
  devices: readonly ReportDevice[];
}

/** At most this many bars: neighbouring buckets are added together beyond it. */
const maxBars = 120;
const margin = 50;
const intervalNames: Readonly<Record<TimeseriesInterval, string>> = { "1h": "hour", "1d": "day", "1w": "week (from Monday)" };

/** The built-in fonts write WinAnsi only: anything beyond Latin-1 becomes "?" rather than garbage. */
function printable(text: string): string {
  return text.replace(/[^\u0020-\u007e\u00a0-\u00ff]/gu, "?");
}

const count = (n: number) => n.toLocaleString("en-US");

/** The report as PDF bytes. */
export function protectionReportPdf(input: ProtectionReportInput): Promise<Buffer> {
  const doc = new PDFDocument({ size: "A4", margin, info: { Title: "Protection report", Creator: "Meshwork" } });
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on("data", (chunk: Buffer) => chunks.push(chunk));
    doc.on("end", () => resolve(Buffer.concat(chunks)));
    doc.on("error", reject);
  });
  const width = doc.page.width - 2 * margin;

  doc.font("Helvetica-Bold").fontSize(22).text("Protection report");
  doc.moveDown(0.3).font("Helvetica").fontSize(11);
  doc.text(
    `Period: ${utcText(input.period.from)} to ${utcText(input.period.to)} (UTC), one bar per ${intervalNames[input.period.interval]}`,
  );
  doc.moveDown(0.8).font("Helvetica-Bold").fontSize(14).text("Totals");
  doc.font("Helvetica").fontSize(11);
  doc.text(`Blocks: ${count(input.totals.blocks)}`);
  doc.text(`Tamper alerts: ${count(input.totals.tamper_alerts)}`);
  doc.text(`Devices: ${count(input.totals.devices)}`);

  doc.moveDown(0.8).font("Helvetica-Bold").fontSize(14).text("Blocks over time");
  drawBars(doc, input.series, width);

  doc.moveDown(0.8).font("Helvetica-Bold").fontSize(14).text("Devices", margin);
  drawDeviceTable(doc, input.devices, width);
  doc.end();
  return done;
}

function drawBars(doc: PDFKit.PDFDocument, series: readonly TimeseriesPoint[], width: number): void {
  const height = 140;
  const top = doc.y + 18;
  const group = Math.max(1, Math.ceil(series.length / maxBars));
  const bars: number[] = [];
  for (let i = 0; i < series.length; i += group) bars.push(series.slice(i, i + group).reduce((sum, p) => sum + p.block_count, 0));
  const highest = Math.max(0, ...bars);
  doc.font("Helvetica").fontSize(8).fillColor("#444444");
  doc.text(`max ${count(highest)} blocks per bar${group > 1 ? ` (${group} buckets each)` : ""}`, margin, top - 12);
  doc
    .lineWidth(0.5)
    .strokeColor("#999999")
    .moveTo(margin, top + height)
    .lineTo(margin + width, top + height)
    .stroke();
  const slot = bars.length > 0 ? width / bars.length : width;
  bars.forEach((value, i) => {
    if (value === 0 || highest === 0) return;
    const h = (value / highest) * height;
    doc.rect(margin + i * slot + slot * 0.1, top + height - h, Math.max(slot * 0.8, 0.5), h).fill("#c0392b");
  });
  doc.fillColor("#444444");
  if (series.length > 0) {
    doc.text(utcText(series[0]!.timestamp), margin, top + height + 4, { lineBreak: false });
    const last = utcText(series[series.length - 1]!.timestamp);
    doc.text(last, margin + width - doc.widthOfString(last), top + height + 4, { lineBreak: false });
  } else {
    doc.text("no buckets", margin, top + height + 4, { lineBreak: false });
  }
  doc.fillColor("black");
  doc.x = margin;
  doc.y = top + height + 20;
}

function drawDeviceTable(doc: PDFKit.PDFDocument, devices: readonly ReportDevice[], width: number): void {
  const columns = [
    { title: "Hostname", x: margin, width: width * 0.6, align: "left" as const },
    { title: "Blocks", x: margin + width * 0.6, width: width * 0.2, align: "right" as const },
    { title: "Tamper alerts", x: margin + width * 0.8, width: width * 0.2, align: "right" as const },
  ];
  const rowHeight = 16;
  const row = (cells: string[], bold: boolean) => {
    if (doc.y + rowHeight > doc.page.height - margin) doc.addPage();
    const y = doc.y;
    doc.font(bold ? "Helvetica-Bold" : "Helvetica").fontSize(10);
    cells.forEach((cell, i) => {
      const column = columns[i]!;
      doc.text(cell, column.x, y, { width: column.width - 6, align: column.align, lineBreak: false, ellipsis: true });
    });
    doc.x = margin;
    doc.y = y + rowHeight;
  };
  doc.moveDown(0.3);
  row(
    columns.map((c) => c.title),
    true,
  );
  if (devices.length === 0) row(["no devices", "", ""], false);
  for (const device of devices) row([printable(device.hostname), count(device.blocks), count(device.tamper_alerts)], false);
}
