/**
 * `flood-fill`: local background removal for images on a plain background (product shots, logos, scans, renders),
 * with sharp for decoding and a flood fill in JavaScript. It is the last fallback behind a hosted segmentation model:
 * no machine-learned matting model ships in an npm package (`@imgly/background-removal-node` downloads its model at
 * run time), so this engine does not pretend to cut a person out of a street photo. It refuses such images instead.
 *
 * How: the background colour is the per-channel median of the border pixels; at least 60 % of the border must lie
 * within the tolerance of it (else the background is not plain: refused, not retryable). Every pixel connected to the
 * border through pixels within the tolerance becomes transparent (4-connected fill, so a hole of the same colour inside
 * the subject is kept); foreground pixels touching the background get a partial alpha by their distance, which
 * softens the cut edge. `standard` scales the result to at most 2048 px on its long side; `hd` keeps the input's size.
 * The output is always a PNG.
 */
import sharp, { type OutputInfo } from 'sharp';
import { EngineError, type BackgroundRemovalEngine, type EngineOptions, type MediaFile } from '../engine.ts';
import { maxInputPixels } from './media-input.ts';

const engine = 'flood-fill';
/** Largest per-channel difference from the background colour that still counts as background. */
const tolerance = 40;
const standardLongSide = 2048;

export class FloodFillBackgroundEngine implements BackgroundRemovalEngine {
  readonly id = engine;

  async removeBackground(
    image: MediaFile,
    request: { quality: 'standard' | 'hd' },
    options: EngineOptions = {},
  ): Promise<MediaFile> {
    let pipeline = sharp(image.bytes, { limitInputPixels: maxInputPixels }).autoOrient();
    if (request.quality === 'standard') {
      pipeline = pipeline.resize(standardLongSide, standardLongSide, { fit: 'inside', withoutEnlargement: true });
    }
    let decoded: { data: Buffer; info: OutputInfo };
    try {
      decoded = await pipeline.ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    } catch (error) {
      throw new EngineError(engine, 'the image could not be decoded', { retryable: false, cause: error });
    }
    if (options.signal?.aborted) throw new EngineError(engine, 'the request was cancelled', { retryable: false });
    const { data, info } = decoded;
    removePlainBackground(data, info.width, info.height);
    const bytes = await sharp(data, { raw: { width: info.width, height: info.height, channels: 4 } })
      .png({ compressionLevel: 6 })
      .toBuffer();
    return { bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length), contentType: 'image/png' };
  }
}

/** Makes the plain background of RGBA `pixels` transparent, in place. */
export function removePlainBackground(pixels: Buffer, width: number, height: number): void {
  const border: number[] = [];
  for (let x = 0; x < width; x++) border.push(x, (height - 1) * width + x);
  for (let y = 1; y < height - 1; y++) border.push(y * width, y * width + width - 1);
  const background = [0, 1, 2].map((channel) => median(border.map((index) => pixels[index * 4 + channel]!)));
  const distance = (index: number) =>
    Math.max(
      Math.abs(pixels[index * 4]! - background[0]!),
      Math.abs(pixels[index * 4 + 1]! - background[1]!),
      Math.abs(pixels[index * 4 + 2]! - background[2]!),
    );
  const plain = border.filter((index) => distance(index) <= tolerance).length;
  if (plain < border.length * 0.6) {
    throw new EngineError(
      engine,
      'the background is not plain: the local engine only removes single-colour backgrounds (a hosted engine, REPLICATE_API_TOKEN, cuts out photos)',
      { retryable: false },
    );
  }
  const isBackground = new Uint8Array(width * height);
  const queue = new Int32Array(width * height);
  let head = 0;
  let tail = 0;
  for (const index of border) {
    if (!isBackground[index] && distance(index) <= tolerance) {
      isBackground[index] = 1;
      queue[tail++] = index;
    }
  }
  while (head < tail) {
    const index = queue[head++]!;
    const x = index % width;
    const neighbours = [
      x > 0 ? index - 1 : -1,
      x < width - 1 ? index + 1 : -1,
      index >= width ? index - width : -1,
      index + width < width * height ? index + width : -1,
    ];
    for (const next of neighbours) {
      if (next >= 0 && !isBackground[next] && distance(next) <= tolerance) {
        isBackground[next] = 1;
        queue[tail++] = next;
      }
    }
  }
  for (let index = 0; index < width * height; index++) {
    if (isBackground[index]) {
      pixels[index * 4 + 3] = 0;
      continue;
    }
    const x = index % width;
    const touches =
      (x > 0 && isBackground[index - 1]) ||
      (x < width - 1 && isBackground[index + 1]) ||
      (index >= width && isBackground[index - width]) ||
      (index + width < width * height && isBackground[index + width]);
    if (touches) {
      // An edge pixel: the nearer its colour to the background, the more of it is background.
      const opacity = Math.min(1, (distance(index) - tolerance) / tolerance);
      pixels[index * 4 + 3] = Math.round(pixels[index * 4 + 3]! * Math.max(0.25, opacity));
    }
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
