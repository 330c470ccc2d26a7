// The paging rule every list shares (page-rule.ts), answering InvalidArgument for a bad page.
import { invalidArgument } from "../errors/index.js";
import { checkPage, type PageRequest } from "./page-rule.js";

export { maxPageSize, type PageRequest } from "./page-rule.js";

export function resolvePage(input: { page?: number; pageSize?: number }, defaults = { pageSize: 50 }): PageRequest {
  const checked = checkPage(input, defaults);
  if (!checked.ok) throw invalidArgument(checked.violations);
  return checked.value;
}
