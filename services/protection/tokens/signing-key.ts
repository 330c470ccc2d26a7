// The key access tokens are signed with: from Protection:Jwt:SigningKeyFile, or generated on the
// first start and kept in PostgreSQL, so every instance and every restart signs and verifies alike.
import { createPrivateKey, generateKeyPairSync } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { EntityManager } from "@mikro-orm/postgresql";
import { ConfigError } from "../../runtime/config/index.js";
import { SigningKeyEntity } from "../store/entities.js";
import { type SigningKey, signingKeyOf } from "./jwt.js";

export async function loadSigningKey(file: string | undefined, em: EntityManager): Promise<SigningKey> {
  if (file !== undefined) {
    let pem: string;
    try {
      pem = await readFile(file, "utf8");
    } catch {
      throw new ConfigError(`Invalid setting Protection:Jwt:SigningKeyFile: cannot read ${file}.`);
    }
    try {
      return signingKeyOf(createPrivateKey({ key: pem, format: "pem" }));
    } catch {
      throw new ConfigError("Invalid setting Protection:Jwt:SigningKeyFile: not an Ed25519 private key in PKCS#8 PEM.");
    }
  }
  const stored = await em.findOne(SigningKeyEntity, { kid: { $ne: "" } }, { orderBy: { createdAt: "asc", kid: "asc" } });
  if (stored) return signingKeyOf(createPrivateKey(stored.privateKeyPem));
  // Two instances starting together may both generate one: the first row (by time, then kid) wins
  // for both, since each reads back what is stored after inserting its own.
  const { privateKey } = generateKeyPairSync("ed25519");
  const key = signingKeyOf(privateKey);
  await em
    .getConnection()
    .execute(`insert into "protection_signing_key" ("kid", "private_key_pem", "created_at") values (?, ?, ?) on conflict do nothing`, [
      key.kid,
      privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
      new Date(),
    ]);
  const first = await em.fork().findOneOrFail(SigningKeyEntity, { kid: { $ne: "" } }, { orderBy: { createdAt: "asc", kid: "asc" } });
  return signingKeyOf(createPrivateKey(first.privateKeyPem));
}
