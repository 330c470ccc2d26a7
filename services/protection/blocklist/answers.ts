// The three signed blocklist answers, in their proto JSON names with every field written. The
// signature covers the answer exactly as served minus `signature`, so build the unsigned answer
// from the same values the response message carries; `updated_at` is the proto3 JSON text of the
// Timestamp as served (e.g. protobuf-es `toJson`: "2025-01-02T03:04:05.678Z").
import type { BlocklistSigner } from "./signing.js";

export interface BlocklistVersionAnswer {
  version: number;
  entry_count: number;
  updated_at: string;
  list_sha256: string;
  key_id: string;
  signature: string;
}

export interface BlocklistDeltaAnswer {
  from_version: number;
  to_version: number;
  added: string[];
  removed: string[];
  entry_count: number;
  list_sha256: string;
  key_id: string;
  signature: string;
}

export interface BlocklistFullAnswer {
  version: number;
  entry_count: number;
  list_sha256: string;
  key_id: string;
  domains: string[];
  signature: string;
}

type Unsigned<T> = Omit<T, "key_id" | "signature">;

export function signVersionAnswer(signer: BlocklistSigner, answer: Unsigned<BlocklistVersionAnswer>): BlocklistVersionAnswer {
  return signer.signed({ ...answer, key_id: signer.keyId });
}

export function signDeltaAnswer(signer: BlocklistSigner, answer: Unsigned<BlocklistDeltaAnswer>): BlocklistDeltaAnswer {
  return signer.signed({ ...answer, key_id: signer.keyId });
}

export function signFullAnswer(signer: BlocklistSigner, answer: Unsigned<BlocklistFullAnswer>): BlocklistFullAnswer {
  return signer.signed({ ...answer, key_id: signer.keyId });
}
