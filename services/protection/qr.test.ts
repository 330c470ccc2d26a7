// The QR images read back: a PNG decoded with pngjs, the code found and read with jsqr, the text the one encoded.
import test from "ava";
import jsqrModule from "jsqr";
import { PNG } from "pngjs";
import { qrPng } from "./qr.js";

// jsqr's types describe an ES module; Node loads its CommonJS build, whose exports are the function itself.
const jsQR = jsqrModule as unknown as typeof jsqrModule.default;

function readQr(png: Buffer): string | undefined {
  const image = PNG.sync.read(png);
  const pixels = new Uint8ClampedArray(image.data.buffer, image.data.byteOffset, image.data.byteLength);
  return jsQR(pixels, image.width, image.height)?.data;
}

const texts = [
  "http://127.0.0.1:8081/v1/enroll/otk_3q2-7wAbCdEfGhIjKlMnOpQrStUvWxYz0123456789_",
  "https://protection.example.org/v1/enrollments/0190f3c2-7a1b-7c3d-8e4f-5a6b7c8d9e0f/qr",
  "x",
];

for (const text of texts) {
  test(`a PNG that reads back as ${JSON.stringify(text.slice(0, 40))}`, async (t) => {
    const png = await qrPng(text);
    t.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "PNG signature");
    t.is(readQr(png), text);
  });
}

test("different texts make different images", async (t) => {
  const [a, b] = await Promise.all([qrPng("http://127.0.0.1:8081/v1/enroll/otk_a"), qrPng("http://127.0.0.1:8081/v1/enroll/otk_b")]);
  t.notDeepEqual(a, b);
  t.is(readQr(b), "http://127.0.0.1:8081/v1/enroll/otk_b");
});

test("an empty text or one too long for a QR code is refused", async (t) => {
  await t.throwsAsync(() => qrPng(""), { instanceOf: RangeError });
  await t.throwsAsync(() => qrPng("a".repeat(5000)));
});
