// QR codes as PNG images, for the enrollment and organization token links an agent's camera reads.
import QRCode from "qrcode";

/** Pixels per QR module: a phone camera reads the code from a screen or from paper. */
const scale = 8;
/** The quiet zone the standard asks for, in modules. */
const margin = 4;

/**
 * A PNG of `text` as a QR code (error correction M: survives a smudge without growing the code
 * much). Refuses an empty text or one too long for a QR code.
 */
export async function qrPng(text: string): Promise<Buffer> {
  if (text === "") throw new RangeError("a QR code needs a non-empty text");
  return QRCode.toBuffer(text, { type: "png", errorCorrectionLevel: "M", margin, scale });
}
