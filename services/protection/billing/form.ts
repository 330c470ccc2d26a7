// Stripe's request bodies: application/x-www-form-urlencoded with nested keys written in brackets
// (`items[0][price]=…`, `metadata[account_id]=…`), brackets left literal as Stripe's own clients do.

export type FormValue = string | number | boolean | null | undefined | FormValue[] | { [key: string]: FormValue };

/** The form body of `params`: undefined is left out, null is sent empty (Stripe's "unset"). */
export function encodeForm(params: { [key: string]: FormValue }): string {
  const pairs: string[] = [];
  const add = (key: string, value: FormValue): void => {
    if (value === undefined) return;
    if (Array.isArray(value)) {
      value.forEach((item, i) => add(`${key}[${i}]`, item));
    } else if (value !== null && typeof value === "object") {
      for (const [name, item] of Object.entries(value)) add(`${key}[${encodeURIComponent(name)}]`, item);
    } else {
      pairs.push(`${key}=${value === null ? "" : encodeURIComponent(String(value))}`);
    }
  };
  for (const [name, value] of Object.entries(params)) add(encodeURIComponent(name), value);
  return pairs.join("&");
}
