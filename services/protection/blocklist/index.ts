// The blocklist as a pure library: domain spelling, RFC 8785 canonical JSON, the Ed25519 signing
// key, versions, deltas and their signed answers. The caller keeps versions and the seed (the
// protection module keeps them in PostgreSQL).
export { DomainError, normalizeDomain } from "./domain.js";
export { CanonicalJsonError, canonicalJson, canonicalJsonBytes, type JsonValue } from "./jcs.js";
export {
  blocklistKeyId,
  blocklistSigningAlgorithm,
  createBlocklistSigner,
  decodeSigningSeed,
  generateSigningSeed,
  SigningKeyError,
  signingKeySetting,
  verifyBlocklistAnswer,
  type BlocklistSigner,
  type SignableAnswer,
} from "./signing.js";
export {
  compileBlocklist,
  diffSorted,
  isSortedDistinct,
  listSha256,
  netChanges,
  planDelta,
  sortDomains,
  type CompiledBlocklist,
  type DeltaPlan,
  type DomainChanges,
} from "./versions.js";
export {
  signDeltaAnswer,
  signFullAnswer,
  signVersionAnswer,
  type BlocklistDeltaAnswer,
  type BlocklistFullAnswer,
  type BlocklistVersionAnswer,
} from "./answers.js";
