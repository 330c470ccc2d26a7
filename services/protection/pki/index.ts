// The device certificate authority as a library: a CA generated or loaded from PEM, device CSRs
// checked, client certificates issued and CRLs signed. Pure: the caller stores the PEMs and the
// revocations (the protection module keeps them in PostgreSQL).
export {
  CaLoadError,
  generateDeviceCa,
  loadDeviceCa,
  loadDeviceCaFiles,
  type DeviceCa,
  type GenerateCaOptions,
  type GeneratedCa,
} from "./ca.js";
export { csrField, CsrError, parseCsr, type DeviceKeyType, type ParsedCsr } from "./csr.js";
export {
  certificateSerial,
  deviceUris,
  issueDeviceCertificate,
  normalizeSerial,
  type IssueOptions,
  type IssuedCertificate,
} from "./certificate.js";
export { createCrl, type CrlOptions, type RevokedCertificate } from "./crl.js";
