/**
 * Image inputs of the media API (`image_base64` for OCR, upscaling and background removal): `sniffImage` says what
 * the bytes are from their content, never from a name or a declared type, with file-type for the format and sharp's
 * header read for the size. PNG, JPEG, WebP and GIF only; anything else (or bytes that do not decode) is null.
 */
import { fileTypeFromBuffer } from 'file-type';
import sharp from 'sharp';

export type ImageMime = 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif';

const accepted = new Set<string>(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);

export interface SniffedImage {
  mime: ImageMime;
  width: number;
  height: number;
}

export async function sniffImage(bytes: Uint8Array): Promise<SniffedImage | null> {
  if (bytes.length === 0) return null;
  const type = await fileTypeFromBuffer(bytes);
  if (!type || !accepted.has(type.mime)) return null;
  try {
    // Only the header: the pixels are decoded later by the engine that uses them.
    const { width, height } = await sharp(bytes, { limitInputPixels: false }).metadata();
    if (!width || !height) return null;
    return { mime: type.mime as ImageMime, width, height };
  } catch {
    return null;
  }
}

/** Decoding limits the engines share: the megapixels a decoded input may have. */
export const maxInputPixels = 25_000_000;
