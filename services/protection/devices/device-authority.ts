// Certificates as the service keeps them: each one issued is a row, a revocation sets its
// revoked_at, and the CRL is signed from those rows on each request, so a revocation shows at once.
import type { EntityManager } from "@mikro-orm/postgresql";
import { createCrl, type DeviceCa, issueDeviceCertificate, type IssuedCertificate, type ParsedCsr } from "../pki/index.js";
import { CertificateEntity } from "../store/devices.js";

export type RevocationReason = "superseded" | "device_deleted" | "unenrolled";

/** How long a client may keep a CRL before fetching a new one. */
const CRL_LIFETIME_MS = 60 * 60 * 1000;

export interface DeviceAuthority {
  readonly ca: DeviceCa;
  /** Seals enrollment tokens for their QR codes (enrollment-token.ts). */
  readonly sealKey: Buffer;
  /** `<PublicBaseUrl>/v1/pki/crl`, written into every certificate. */
  readonly crlUrl: string;
  /** Issues a certificate and stores its row with the entity manager's unit of work. */
  issue(em: EntityManager, request: { csr: ParsedCsr; deviceId: string; enrollmentId: string; tier: string }): IssuedCertificate;
  /** Puts a certificate on the CRL (a no-op when it already is). */
  revoke(em: EntityManager, serial: string, reason: RevocationReason, at?: Date): Promise<void>;
  /** The CRL now, DER: the revoked certificates that have not expired. */
  crl(em: EntityManager): Promise<Buffer>;
}

export function deviceAuthority(options: { ca: DeviceCa; sealKey: Buffer; publicBaseUrl: string; validityDays: number }): DeviceAuthority {
  const crlUrl = `${options.publicBaseUrl.replace(/\/+$/, "")}/v1/pki/crl`;
  return {
    ca: options.ca,
    sealKey: options.sealKey,
    crlUrl,

    issue(em, request) {
      const now = new Date();
      const issued = issueDeviceCertificate(options.ca, { ...request, validityDays: options.validityDays, crlUrl, now });
      em.persist(
        em.create(CertificateEntity, {
          serial: issued.serial,
          deviceId: request.deviceId,
          enrollmentId: request.enrollmentId,
          notBefore: issued.notBefore,
          notAfter: issued.notAfter,
          createdAt: now,
          revokedAt: null,
          revocationReason: null,
        }),
      );
      return issued;
    },

    async revoke(em, serial, reason, at = new Date()) {
      await em.execute(
        `update "protection_certificate" set "revoked_at" = ?, "revocation_reason" = ? where "serial" = ? and "revoked_at" is null`,
        [at, reason, serial],
        "run",
      );
    },

    async crl(em) {
      const now = new Date();
      const rows = await em.execute<{ serial: string; revoked_at: Date }[]>(
        `select "serial", "revoked_at" from "protection_certificate" where "revoked_at" is not null and "not_after" > ?`,
        [now],
      );
      return createCrl(options.ca, {
        revoked: rows.map((r) => ({ serial: r.serial, revokedAt: new Date(r.revoked_at) })),
        // Grows with time: every CRL made later has a larger number, whichever instance makes it.
        crlNumber: now.getTime(),
        thisUpdate: now,
        nextUpdate: new Date(now.getTime() + CRL_LIFETIME_MS),
      });
    },
  };
}
