// The device CA against clients written by others: CSRs made with @peculiar/x509 (Ed25519, P-256,
// tampered, RSA and P-384 refused), certificates checked with node:crypto's X509Certificate, the
// CRL verified in code and, where openssl is installed, with `openssl crl` and `openssl verify`.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import test from "ava";
import { execFile } from "node:child_process";
import { verify, webcrypto, X509Certificate } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { children, contentOf, derToPem, readWhole } from "./der.js";
import {
  CaLoadError,
  createCrl,
  CsrError,
  generateDeviceCa,
  issueDeviceCertificate,
  loadDeviceCa,
  loadDeviceCaFiles,
  parseCsr,
  type DeviceCa,
} from "./index.js";

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
const subtle = webcrypto.subtle;
type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
type EcdsaParams = webcrypto.EcdsaParams;
const run = promisify(execFile);
const crlUrl = "http://127.0.0.1:8081/v1/pki/crl";

type KeyKind = "ed25519" | "p256" | "p384" | "rsa";
const algorithms: Record<
  KeyKind,
  { key: webcrypto.RsaHashedKeyGenParams | webcrypto.EcKeyGenParams | webcrypto.Algorithm; sign: webcrypto.Algorithm | EcdsaParams }
> = {
  ed25519: { key: { name: "Ed25519" }, sign: { name: "Ed25519" } },
  p256: { key: { name: "ECDSA", namedCurve: "P-256" }, sign: { name: "ECDSA", hash: "SHA-256" } as EcdsaParams },
  p384: { key: { name: "ECDSA", namedCurve: "P-384" }, sign: { name: "ECDSA", hash: "SHA-384" } as EcdsaParams },
  rsa: {
    key: { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    sign: { name: "RSASSA-PKCS1-v1_5" },
  },
};

async function makeCsr(kind: KeyKind): Promise<{ pem: string; der: Uint8Array; keys: CryptoKeyPair }> {
  const { key, sign } = algorithms[kind];
  const keys = (await subtle.generateKey(key as webcrypto.EcKeyGenParams, true, ["sign", "verify"])) as CryptoKeyPair;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name: "CN=agent", keys, signingAlgorithm: sign });
  return { pem: csr.toString("pem"), der: new Uint8Array(csr.rawData), keys };
}

/** A certificate for a fresh key of `kind`, for tests about the CA rather than the request. */
async function issueFor(ca: DeviceCa, kind: KeyKind, deviceId = "d1", tier = "self") {
  return issueDeviceCertificate(ca, { csr: (await makeCsr(kind)).pem, deviceId, enrollmentId: `e-${deviceId}`, tier, crlUrl });
}

function spkiOf(key: CryptoKey): Promise<Buffer> {
  return subtle.exportKey("spki", key).then((b) => Buffer.from(b));
}

test("a generated CA is a self-signed P-256 CA for certificates and CRLs, and loads back from its PEMs", async (t) => {
  const { ca, certPem, keyPem } = await generateDeviceCa();
  const cert = new X509Certificate(certPem);
  t.true(cert.ca);
  t.is(cert.subject, "CN=Meshwork Device CA");
  t.true(cert.verify(cert.publicKey), "self-signed");
  t.is(cert.publicKey.asymmetricKeyType, "ec");
  t.is(cert.publicKey.asymmetricKeyDetails?.namedCurve, "prime256v1");
  t.regex(keyPem, /^-----BEGIN PRIVATE KEY-----/);
  const parsed = new x509.X509Certificate(certPem);
  const basic = parsed.getExtension(x509.BasicConstraintsExtension);
  t.true(basic?.ca);
  t.true(basic?.critical);
  const usage = parsed.getExtension(x509.KeyUsagesExtension);
  t.is(usage?.usages, x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign);
  t.true(usage?.critical);
  t.truthy(parsed.getExtension(x509.SubjectKeyIdentifierExtension));

  const loaded = loadDeviceCa({ certPem, keyPem });
  t.is(loaded.certPem, ca.certPem);
  t.deepEqual(loaded.keyId, ca.keyId);
  const issued = await issueFor(loaded, "p256", "d1", "self");
  t.true(new X509Certificate(issued.certPem).verify(cert.publicKey), "a certificate from the loaded CA verifies against the generated one");
});

test("a CA is refused when its key does not match, it is no CA, or either PEM is unreadable", async (t) => {
  const a = await generateDeviceCa();
  const b = await generateDeviceCa();
  t.throws(() => loadDeviceCa({ certPem: a.certPem, keyPem: b.keyPem }), { instanceOf: CaLoadError, message: /does not belong/ });
  t.throws(() => loadDeviceCa({ certPem: "nonsense", keyPem: a.keyPem }), {
    instanceOf: CaLoadError,
    message: /not a readable PEM certificate/,
  });
  const refused = t.throws(
    () => loadDeviceCa({ certPem: a.certPem, keyPem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----" }),
    {
      instanceOf: CaLoadError,
    },
  );
  t.notRegex(refused!.message, /AAAA/);
  const leaf = await issueFor(a.ca, "p256");
  t.throws(
    () =>
      loadDeviceCa({
        certPem: leaf.certPem,
        keyPem: b.keyPem,
      }),
    { instanceOf: CaLoadError, message: /not a CA/ },
  );
});

test("a CA made elsewhere (P-384, by @peculiar/x509) loads from files and signs what verifies against it", async (t) => {
  const keys = (await subtle.generateKey({ name: "ECDSA", namedCurve: "P-384" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "0a1b",
    name: "CN=Outside CA, O=Example",
    keys,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-384" } as EcdsaParams,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
    ],
  });
  const dir = await mkdtemp(join(tmpdir(), "meshwork-pki-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const certFile = join(dir, "ca.pem");
  const keyFile = join(dir, "ca.key");
  await writeFile(certFile, caCert.toString("pem"));
  await writeFile(keyFile, derToPem(new Uint8Array(await subtle.exportKey("pkcs8", keys.privateKey)), "PRIVATE KEY"));
  const ca = await loadDeviceCaFiles({ certFile, keyFile });
  const issued = await issueFor(ca, "ed25519", "d2", "partner");
  const cert = new X509Certificate(issued.certPem);
  t.true(cert.verify(new X509Certificate(caCert.toString("pem")).publicKey));
  t.is(cert.issuer, "CN=Outside CA\nO=Example");
  t.true(cert.checkIssued(new X509Certificate(caCert.toString("pem"))));
  await t.throwsAsync(() => loadDeviceCaFiles({ certFile: keyFile, keyFile }), {
    instanceOf: CaLoadError,
    message: new RegExp(keyFile.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")),
  });
});

for (const kind of ["ed25519", "p256"] as const) {
  test(`${kind === "p256" ? "a P-256" : "an Ed25519"} CSR gets a client certificate for the device, its enrollment and tier, verified against the CA`, async (t) => {
    const { ca } = await generateDeviceCa();
    const csr = await makeCsr(kind);
    const parsed = parseCsr(csr.pem);
    t.is(parsed.keyType, kind);
    const now = new Date("2026-03-01T12:00:00.000Z");
    const deviceId = "0190f3c2-7a1b-7c3d-8e4f-5a6b7c8d9e0f";
    const enrollmentId = "0190f3c2-0000-7c3d-8e4f-000000000001";
    const issued = issueDeviceCertificate(ca, { csr: parsed, deviceId, enrollmentId, tier: "authority", validityDays: 30, crlUrl, now });
    const cert = new X509Certificate(issued.certPem);
    t.true(cert.verify(ca.certificate.publicKey));
    t.true(cert.checkIssued(ca.certificate));
    t.false(cert.ca);
    t.is(cert.subject, `CN=${deviceId}`);
    t.is(cert.issuer, "CN=Meshwork Device CA");
    t.is(
      cert.subjectAltName,
      `URI:urn:meshwork:device:${deviceId}, URI:urn:meshwork:enrollment:${enrollmentId}, URI:urn:meshwork:tier:authority`,
    );
    t.deepEqual(cert.keyUsage, ["1.3.6.1.5.5.7.3.2"], "EKU clientAuth only");
    t.is(new Date(cert.validTo).getTime(), issued.notAfter.getTime());
    t.is(new Date(cert.validFrom).getTime(), issued.notBefore.getTime());
    t.is(issued.notAfter.getTime(), now.getTime() + 30 * 86_400_000);
    t.true(issued.notBefore <= now);
    t.is(issued.serial, cert.serialNumber.toLowerCase());
    t.regex(issued.serial, /^[1-7][0-9a-f]{31}$|^0[1-9a-f][0-9a-f]{30}$/, "positive, lower-case hex");
    t.deepEqual(cert.publicKey.export({ type: "spki", format: "der" }), await spkiOf(csr.keys.publicKey));
    const peculiar = new x509.X509Certificate(issued.certPem);
    const points = peculiar.getExtension(x509.CRLDistributionPointsExtension);
    t.deepEqual(
      [...(points?.distributionPoints ?? [])].flatMap((p) => p.distributionPoint?.fullName?.map((n) => n.uniformResourceIdentifier) ?? []),
      [crlUrl],
    );
    t.is(peculiar.getExtension(x509.KeyUsagesExtension)?.usages, x509.KeyUsageFlags.digitalSignature);
    t.deepEqual(
      Buffer.from(peculiar.getExtension(x509.AuthorityKeyIdentifierExtension)!.keyId!, "hex"),
      ca.keyId,
      "the authority key id is the CA's subject key id",
    );
    const again = issueDeviceCertificate(ca, { csr: csr.pem, deviceId, enrollmentId, tier: "authority", crlUrl, now });
    t.not(again.serial, issued.serial, "a fresh random serial each time");
    t.is(again.notAfter.getTime(), now.getTime() + 365 * 86_400_000, "365 days by default");
  });
}

test("CSRs are refused, naming client_cert_csr: tampered, RSA, P-384, not a request, garbage", async (t) => {
  const good = await makeCsr("p256");
  // The subject's last byte (the "t" of CN=agent) changed: the signature no longer covers it.
  const tampered = Buffer.from(good.der);
  const at = tampered.indexOf(Buffer.from("agent"));
  tampered[at + 4] = "x".charCodeAt(0);
  const ed = await makeCsr("ed25519");
  const edSig = Buffer.from(ed.der);
  edSig[edSig.length - 1]! ^= 0x01;
  const cases: [string, string, RegExp][] = [
    ["tampered P-256 subject", derToPem(tampered, "CERTIFICATE REQUEST"), /signature that does not verify/],
    ["tampered Ed25519 signature", derToPem(edSig, "CERTIFICATE REQUEST"), /signature that does not verify/],
    ["RSA", (await makeCsr("rsa")).pem, /RSA key; only Ed25519 and P-256/],
    ["P-384", (await makeCsr("p384")).pem, /secp384r1; only Ed25519 and P-256/],
    ["a certificate", (await generateDeviceCa()).certPem, /must be a PEM PKCS#10 certificate request/],
    ["garbage", "hello", /must be a PEM PKCS#10/],
    ["garbage inside the armour", "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----", /not a well-formed/],
    ["trailing bytes", derToPem(Buffer.concat([good.der, Buffer.from([0])]), "CERTIFICATE REQUEST"), /not a well-formed/],
    ["too long", `${good.pem}${" ".repeat(20_000)}`, /at most 16 KiB/],
  ];
  for (const [what, pem, message] of cases) {
    const err = t.throws(() => parseCsr(pem), { instanceOf: CsrError }, what);
    t.regex(err!.message, /^client_cert_csr /, what);
    t.regex(err!.message, message, what);
    t.is(err!.field, "client_cert_csr");
  }
  const { ca } = await generateDeviceCa();
  const rsa = (await makeCsr("rsa")).pem;
  t.throws(() => issueDeviceCertificate(ca, { csr: rsa, deviceId: "d", enrollmentId: "e", tier: "self", crlUrl }), {
    instanceOf: CsrError,
  });
  t.is(parseCsr(good.pem).keyType, "p256", "the untouched request passes");
});

test("the CRL is DER signed by the CA, lists the revoked serials with their dates, and openssl agrees", async (t) => {
  const { ca, certPem } = await generateDeviceCa();
  const [revoked1, revoked2, kept] = await Promise.all(["d1", "d2", "d3"].map((id) => issueFor(ca, "ed25519", id)));
  const thisUpdate = new Date("2026-03-01T12:00:00.000Z");
  const nextUpdate = new Date(Date.now() + 3_600_000);
  const revokedAt1 = new Date("2026-02-01T08:30:00.000Z");
  const revokedAt2 = new Date("2026-02-20T23:59:59.000Z");
  const der = createCrl(ca, {
    revoked: [
      { serial: revoked1.serial, revokedAt: revokedAt1 },
      { serial: revoked2.serial.toUpperCase(), revokedAt: revokedAt2 },
    ],
    crlNumber: 42,
    thisUpdate,
    nextUpdate,
  });

  // In code: the signature over the TBS verifies with the CA's public key, and fails on a changed byte.
  const [tbsNode, , sigNode] = children(der, readWhole(der));
  const tbs = der.subarray(tbsNode!.start, tbsNode!.end);
  const signature = contentOf(der, sigNode!).subarray(1);
  t.true(verify("sha256", tbs, { key: ca.certificate.publicKey, dsaEncoding: "der" }, signature));
  const changed = Buffer.from(tbs);
  changed[changed.length - 1]! ^= 1;
  t.false(verify("sha256", changed, { key: ca.certificate.publicKey, dsaEncoding: "der" }, signature));

  const crl = new x509.X509Crl(der);
  t.true(await crl.verify({ publicKey: await new x509.X509Certificate(certPem).publicKey.export() }));
  t.deepEqual(
    crl.entries.map((e) => [e.serialNumber.toLowerCase(), e.revocationDate.toISOString()]).sort(),
    [
      [revoked1.serial, revokedAt1.toISOString()],
      [revoked2.serial, revokedAt2.toISOString()],
    ].sort(),
  );
  t.is(crl.thisUpdate.toISOString(), thisUpdate.toISOString());
  t.is(crl.nextUpdate?.toISOString(), new Date(Math.floor(nextUpdate.getTime() / 1000) * 1000).toISOString());
  t.is(crl.issuer, "CN=Meshwork Device CA");
  const number = crl.extensions.find((e) => e.type === "2.5.29.20");
  t.deepEqual([...new Uint8Array(number!.value)], [0x02, 0x01, 42], "CRL number 42");

  const empty = new x509.X509Crl(createCrl(ca, { revoked: [], crlNumber: 43, nextUpdate }));
  t.is(empty.entries.length, 0);
  t.true(await empty.verify({ publicKey: await new x509.X509Certificate(certPem).publicKey.export() }));
  t.throws(() => createCrl(ca, { revoked: [], crlNumber: 1, thisUpdate: nextUpdate, nextUpdate: thisUpdate }), { instanceOf: RangeError });

  const openssl = await run("openssl", ["version"]).then(
    () => true,
    () => false,
  );
  if (!openssl) {
    t.log("openssl is not installed: the CRL was checked in code only");
    return;
  }
  const dir = await mkdtemp(join(tmpdir(), "meshwork-crl-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = (name: string, content: string | Buffer) => writeFile(join(dir, name), content).then(() => join(dir, name));
  const caFile = await file("ca.pem", certPem);
  const crlFile = await file("crl.der", der);
  const checked = await run("openssl", ["crl", "-inform", "DER", "-in", crlFile, "-CAfile", caFile, "-noout", "-text"]);
  t.regex(checked.stderr + checked.stdout, /verify OK/);
  t.regex(checked.stdout, new RegExp(`Serial Number: ${revoked1.serial}`, "i"));
  t.regex(checked.stdout, new RegExp(`Serial Number: ${revoked2.serial}`, "i"));
  t.regex(checked.stdout, /X509v3 CRL Number:\s*\n\s*42/);
  // openssl checks the CRL's dates against the real clock: made now for this part.
  const current = await file(
    "current.pem",
    derToPem(createCrl(ca, { revoked: [{ serial: revoked1.serial, revokedAt: revokedAt1 }], crlNumber: 44, nextUpdate }), "X509 CRL"),
  );
  const verifyLeaf = (leafPem: string, name: string) =>
    file(name, leafPem).then((leafFile) =>
      run("openssl", ["verify", "-crl_check", "-purpose", "sslclient", "-CAfile", caFile, "-CRLfile", current, leafFile]).then(
        (r) => r.stdout + r.stderr,
        (err: { stdout: string; stderr: string }) => err.stdout + err.stderr,
      ),
    );
  t.regex(await verifyLeaf(kept.certPem, "kept.pem"), /: OK/);
  t.regex(await verifyLeaf(revoked1.certPem, "revoked.pem"), /certificate revoked/);
});
