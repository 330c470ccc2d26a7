// Connection URLs end up in logs and error messages; the password never should.

export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    // An unparsable URL may still hold a secret, so show nothing of it.
    return "<unparsable url>";
  }
}
