// Which request Content-Types carry JSON: application/json and application/*+json, in UTF-8.

export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const semi = header.indexOf(";");
  const mediaType = (semi < 0 ? header : header.slice(0, semi)).trim().toLowerCase();
  if (mediaType !== "application/json" && !/^application\/[a-z0-9!#$&^_.-]+\+json$/.test(mediaType)) {
    return false;
  }
  if (semi < 0) return true;
  for (const param of header.slice(semi + 1).split(";")) {
    const eq = param.indexOf("=");
    if (eq < 0) continue;
    if (param.slice(0, eq).trim().toLowerCase() !== "charset") continue;
    const charset = param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1")
      .toLowerCase();
    if (charset !== "utf-8" && charset !== "utf8") return false;
  }
  return true;
}
