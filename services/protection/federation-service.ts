// protection.v1.FederationService: federated reports from other instances (an API key of
// Protection:Federated:ApiKeys in the body, compared by SHA-256 digest in constant time) into the
// review queue, and the Tor exit list the worker keeps.
import { createHash, timingSafeEqual } from "node:crypto";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FederationService } from "../../gen/protection/v1/federation_pb.js";
import type { ProtectionDeps } from "./deps.js";
import { checkDomain, checkOneOf, reportReasons } from "./domain/blocklist-rules.js";
import { accepted, refusal, validationError } from "./errors.js";
import { type DomainReport, recordDomainReport } from "./review-queue.js";
import { readTorExits } from "./tor-exit-worker.js";

export const FEDERATED_BATCH_MAX = 500;

const digest = (key: string) => createHash("sha256").update(key, "utf8").digest();

/** The configured keys, kept as digests only; `accepts` compares against every one. */
export function federatedKeyring(keys: readonly { name: string; key: string }[]) {
  const digests = keys.map((k) => digest(k.key));
  return {
    accepts(key: string): boolean {
      if (key === "") return false;
      const given = digest(key);
      let found = false;
      for (const d of digests) if (timingSafeEqual(d, given)) found = true;
      return found;
    },
  };
}

export function federationService(
  deps: ProtectionDeps,
  keyring: ReturnType<typeof federatedKeyring>,
): ServiceImpl<typeof FederationService> {
  return {
    async submitFederatedReports(req) {
      if (!keyring.accepts(req.apiKey)) throw refusal(Code.Unauthenticated, "INVALID_API_KEY", "The api_key is not valid.");
      if (req.reports.length < 1 || req.reports.length > FEDERATED_BATCH_MAX) {
        throw validationError("reports", `reports must hold 1 to ${FEDERATED_BATCH_MAX} reports.`);
      }
      const reports: DomainReport[] = req.reports.map((r, i) => {
        const domain = accepted(checkDomain(r.domain, `reports[${i}].domain`));
        const reason = accepted(checkOneOf(`reports[${i}].report_type`, r.reportType, reportReasons));
        const confidence = r.confidence;
        if (confidence === undefined || !Number.isFinite(confidence) || confidence < 0 || confidence > 1) {
          throw validationError(`reports[${i}].confidence`, `reports[${i}].confidence must be a number from 0 to 1.`);
        }
        return { domain, source: "federated", reason, confidence, context: null };
      });
      await deps.uow.run(async (tx) => {
        for (const report of reports) await recordDomainReport(tx, report);
      });
      return { accepted: reports.length };
    },

    async getTorExits() {
      const list = await readTorExits(deps.db.em());
      return { exits: list.exits, ...(list.updatedAt ? { updatedAt: timestampFromDate(list.updatedAt) } : {}) };
    },
  };
}
