import test, { type ExecutionContext } from "ava";
import { checkDisplayName, checkEmail, checkPassword } from "./account-rules.js";

const refused = (t: ExecutionContext, checked: ReturnType<typeof checkPassword>, message: RegExp) => {
  t.false(checked.ok);
  if (!checked.ok) t.regex(checked.message, message);
};

const account = { email: "alice.smith@example.com", displayName: "Alice Smith Example" };

test("e-mails are trimmed and lower-cased; syntax only", (t) => {
  t.deepEqual(checkEmail("  Alice@Example.COM "), { ok: true, value: "alice@example.com" });
  for (const bad of ["", "alice", "alice@", "@example.com", "a b@example.com", "alice@example", `${"a".repeat(65)}@example.com`]) {
    t.like(checkEmail(bad), { ok: false, field: "email" }, bad);
  }
});

test("display names are 1..100 characters after trimming", (t) => {
  t.deepEqual(checkDisplayName("  Bob  "), { ok: true, value: "Bob" });
  t.like(checkDisplayName("   "), { ok: false, field: "display_name" });
  t.like(checkDisplayName("x".repeat(101)), { ok: false });
  t.like(checkDisplayName("é".repeat(100)), { ok: true });
});

test("passwords: length, nothing from the account, no repeats, no common ones", (t) => {
  t.like(checkPassword("correct horse battery", account), { ok: true });
  t.like(checkPassword("short", account), { ok: false, field: "password" });
  t.like(checkPassword("x".repeat(129), account), { ok: false });
  refused(t, checkPassword("a".repeat(12), account), /repeated/);
  refused(t, checkPassword("ALICE.SMITH@EXAMPLE.COM", account), /e-mail/);
  t.like(checkPassword("alice.smith1", { ...account, email: "alice.smith1@example.com" }), { ok: false });
  t.like(checkPassword("alice smith example", account), { ok: false });
  for (const common of ["password1234", "123456789012", "qwertyuiop123", "Password1234"]) {
    refused(t, checkPassword(common, account), /common/);
  }
});
