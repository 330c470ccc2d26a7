// The end of an enrollment, whoever completes it (an approval, or the unenroll worker at
// eligible_at): the enrollment is unenrolled, its device turns unenrolled (its config all off, a
// heartbeat answers `unenroll`), the device's certificate goes on the CRL and each device records
// an enrollment_change event.
import { EnrollmentUnenrolledSchema } from "../../../gen/protection/v1/events_pb.js";
import type { Transaction } from "../../runtime/outbox/index.js";
import { recordEnrollmentChange } from "../device-events/event-store.js";
import { DeviceEntity, type EnrollmentRow } from "../store/devices.js";
import type { DeviceAuthority } from "./device-authority.js";

export async function completeUnenrollment(
  tx: Transaction,
  authority: DeviceAuthority,
  enrollment: EnrollmentRow,
  how: { reason: "time_delay" | "approved"; approvedBy?: string },
): Promise<void> {
  const now = new Date();
  const from = enrollment.status;
  tx.em.assign(enrollment, { status: "unenrolled", unenrolledAt: now, updatedAt: now });
  const devices = await tx.em.find(DeviceEntity, { enrollmentId: enrollment.id });
  await recordEnrollmentChange(tx.em, devices, enrollment.id, from, "unenrolled", now);
  for (const device of devices) {
    tx.em.assign(device, { status: "unenrolled", updatedAt: now });
    await authority.revoke(tx.em, device.certificateSerial, "unenrolled", now);
  }
  tx.record(EnrollmentUnenrolledSchema, {
    enrollmentId: enrollment.id,
    deviceId: enrollment.deviceId ?? "",
    accountId: enrollment.accountId ?? "",
    reason: how.reason,
    approvedBy: how.approvedBy ?? "",
  });
}
