// Analytics reports as pure functions: the UTC buckets of a time series, its CSV and the PDF report.
export {
  floorToBucket,
  isTimeseriesInterval,
  maxTimeseriesBuckets,
  TimeseriesRangeError,
  timeseriesBuckets,
  timeseriesIntervals,
  utcText,
  zeroFilledSeries,
  type TimeseriesInterval,
  type TimeseriesPoint,
} from "./buckets.js";
export { timeseriesCsv, timeseriesCsvHeader } from "./csv.js";
export { protectionReportPdf, type ProtectionReportInput, type ReportDevice } from "./pdf.js";
