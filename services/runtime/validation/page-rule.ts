// The paging rule every list shares, as a pure check: page >= 1 (default 1),
// 1 <= pageSize <= 200 (default 50). resolvePage (page-request.ts) is its ConnectError form.
import type { Checked, FieldViolation } from "../errors/field-violation.js";

export interface PageRequest {
  page: number;
  pageSize: number;
  offset: number;
}

export const maxPageSize = 200;

export function checkPage(input: { page?: number; pageSize?: number }, defaults = { pageSize: 50 }): Checked<PageRequest> {
  const page = input.page ?? 1;
  const pageSize = input.pageSize ?? defaults.pageSize;
  const violations: FieldViolation[] = [];
  if (page < 1) violations.push({ field: "page", description: "must be 1 or more" });
  if (pageSize < 1 || pageSize > maxPageSize) violations.push({ field: "page_size", description: `must be from 1 to ${maxPageSize}` });
  if (violations.length) return { ok: false, violations };
  return { ok: true, value: { page, pageSize, offset: (page - 1) * pageSize } };
}
