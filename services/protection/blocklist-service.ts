// protection.v1.BlocklistService handlers: the signed version, delta and full list, the public
// key, and accounts' reports of domains (to the review queue, rate limited per account).
import { Code, type ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { BlocklistService } from "../../gen/protection/v1/blocklist_pb.js";
import { currentIdentity } from "../runtime/auth/index.js";
import type { BlocklistVersions } from "./blocklist-versions.js";
import type { ProtectionDeps } from "./deps.js";
import { checkDomain, checkOneOf, checkText, reportReasons } from "./domain/blocklist-rules.js";
import { accepted, rateLimited, refusal, validationError } from "./errors.js";
import { recordDomainReport } from "./review-queue.js";
import { bearerOf } from "./tokens/token-service.js";

const REPORTED = "Thank you: the domain will be reviewed.";

const noVersion = () => refusal(Code.NotFound, "NO_BLOCKLIST_VERSION", "No blocklist version has been compiled yet.");
const fullSyncRequired = () =>
  refusal(Code.Aborted, "FULL_SYNC_REQUIRED", "No delta from this version: fetch the full list from /v1/blocklist/full.");

export function blocklistService(deps: ProtectionDeps, blocklist: BlocklistVersions): ServiceImpl<typeof BlocklistService> {
  return {
    async getBlocklistVersion() {
      const answer = await blocklist.version();
      if (!answer) throw noVersion();
      return {
        version: answer.version,
        entryCount: answer.entry_count,
        updatedAt: timestampFromDate(new Date(answer.updated_at)),
        listSha256: answer.list_sha256,
        keyId: answer.key_id,
        signature: answer.signature,
      };
    },

    async getBlocklistDelta(req) {
      if (req.fromVersion === undefined) throw validationError("from_version", "from_version is required (0 for the empty list)");
      if (req.fromVersion < 0) throw validationError("from_version", "from_version must be 0 or more");
      const answer = await blocklist.delta(req.fromVersion);
      if (answer === "no_version") throw noVersion();
      if (answer === "full_sync_required") throw fullSyncRequired();
      return {
        fromVersion: answer.from_version,
        toVersion: answer.to_version,
        added: answer.added,
        removed: answer.removed,
        entryCount: answer.entry_count,
        listSha256: answer.list_sha256,
        keyId: answer.key_id,
        signature: answer.signature,
      };
    },

    async getBlocklistFull() {
      const answer = await blocklist.full();
      if (!answer) throw noVersion();
      return {
        version: answer.version,
        entryCount: answer.entry_count,
        listSha256: answer.list_sha256,
        keyId: answer.key_id,
        domains: answer.domains,
        signature: answer.signature,
      };
    },

    async getBlocklistPublicKey() {
      const key = blocklist.signer.publicKeyAnswer;
      return { keyId: key.key_id, algorithm: key.algorithm, publicKey: key.public_key };
    },

    async reportDomain(req) {
      const me = bearerOf(currentIdentity()).name;
      const domain = accepted(checkDomain(req.domain));
      const reason = accepted(checkOneOf("reason", req.reason, reportReasons));
      const context = accepted(checkText("context", req.context, 1000));
      const decision = await deps.limits.hit(`blocklist-report:${me}`, deps.settings.protection.rateLimits.blocklistReport);
      if (!decision.allowed) throw rateLimited(decision.retryAfterSeconds);
      await deps.uow.run((tx) => recordDomainReport(tx, { domain, source: "agent", reason, confidence: 0.5, context, accountId: me }));
      return { message: REPORTED };
    },
  };
}
