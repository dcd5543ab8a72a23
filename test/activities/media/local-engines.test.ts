/**
 * The local media engines on real inputs made here: images with known text rendered by sharp (English through an
 * SVG `<text>` in DejaVu Sans; Japanese kanji drawn as strokes, because the machine has no font with Japanese
 * glyphs) read back by Tesseract, upscales whose PNG sizes are checked, and speech whose MP3 frames are counted to
 * get its duration. No network, no Temporal, no database.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import sharp from 'sharp';
import { EngineError } from '../../../activities/media/engine.ts';
import { EspeakSpeechEngine, espeakRate, espeakVoice } from '../../../activities/media/local/espeak-speech.ts';
import { sniffImage } from '../../../activities/media/local/media-input.ts';
import { SharpUpscaleEngine } from '../../../activities/media/local/sharp-upscale.ts';
import { TesseractOcrEngine, tesseractLanguage } from '../../../activities/media/local/tesseract-ocr.ts';
import { englishImage, japaneseImage } from '../../helpers/media-images.ts';

const png = (bytes: Buffer) => ({ bytes: new Uint8Array(bytes), contentType: 'image/png' });

/** Counts MPEG audio frames (skipping an ID3v2 tag) and returns the audio's duration from them. */
function mp3Duration(bytes: Uint8Array): { frames: number; sampleRate: number; seconds: number } {
  let offset = 0;
  if (bytes[0] === 0x49 && bytes[1] === 0x44 && bytes[2] === 0x33) {
    offset =
      10 + (((bytes[6]! & 0x7f) << 21) | ((bytes[7]! & 0x7f) << 14) | ((bytes[8]! & 0x7f) << 7) | (bytes[9]! & 0x7f));
  }
  const bitrates = {
    mpeg1: [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
    mpeg2: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  };
  const sampleRates = { 3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000] } as Record<
    number,
    number[]
  >;
  let frames = 0;
  let sampleRate = 0;
  let samplesPerFrame = 0;
  while (offset + 4 <= bytes.length) {
    const b1 = bytes[offset + 1]!;
    const b2 = bytes[offset + 2]!;
    if (bytes[offset] !== 0xff || (b1 & 0xe0) !== 0xe0) throw new Error(`no frame sync at byte ${offset}`);
    const version = (b1 >> 3) & 3;
    if (((b1 >> 1) & 3) !== 1) throw new Error('not Layer III');
    const bitrate = (version === 3 ? bitrates.mpeg1 : bitrates.mpeg2)[b2 >> 4]! * 1000;
    const rate = sampleRates[version]![(b2 >> 2) & 3]!;
    const padding = (b2 >> 1) & 1;
    sampleRate = rate;
    samplesPerFrame = version === 3 ? 1152 : 576;
    offset += Math.floor(((samplesPerFrame / 8) * bitrate) / rate) + padding;
    frames++;
  }
  return { frames, sampleRate, seconds: (frames * samplesPerFrame) / sampleRate };
}

describe('tesseract OCR', () => {
  const ocr = new TesseractOcrEngine();
  afterAll(() => ocr.close());

  it('reads English text back from a rendered image', async () => {
    const result = await ocr.recognize(png(await englishImage('Durable tessera engines 2026')), { language: 'en' });
    expect(result.text).toBe('Durable tessera engines 2026');
    expect(result.confidence).toBeGreaterThan(0.5);
    expect(result.words.map((word) => word.text)).toEqual(['Durable', 'tessera', 'engines', '2026']);
  });

  it('reads Japanese kanji back, with no spaces between the characters', async () => {
    const result = await ocr.recognize(png(await japaneseImage('十三日')), { language: 'ja' });
    expect(result.text).toBe('十三日');
    expect(result.confidence).toBeGreaterThan(0.5);
  });

  it('decodes JPEG and WebP inputs too', async () => {
    const image = await englishImage('Invoice 4711');
    const jpeg = await sharp(image).jpeg({ quality: 90 }).toBuffer();
    const webp = await sharp(image).webp().toBuffer();
    for (const [bytes, contentType] of [
      [jpeg, 'image/jpeg'],
      [webp, 'image/webp'],
    ] as const) {
      const result = await ocr.recognize({ bytes: new Uint8Array(bytes), contentType }, { language: 'en' });
      expect(result.text).toBe('Invoice 4711');
    }
  });

  it('refuses unknown languages, undecodable bytes and images above 25 megapixels, not retryable', async () => {
    const small = png(await englishImage('x'));
    await expect(ocr.recognize(small, { language: 'fr' })).rejects.toMatchObject({ retryable: false });
    await expect(
      ocr.recognize({ bytes: new TextEncoder().encode('not an image'), contentType: 'image/png' }, { language: 'en' }),
    ).rejects.toMatchObject({ name: 'EngineError', retryable: false });
    const huge = await sharp({ create: { width: 6000, height: 4500, channels: 3, background: 'white' } })
      .jpeg()
      .toBuffer();
    await expect(
      ocr.recognize({ bytes: new Uint8Array(huge), contentType: 'image/jpeg' }, { language: 'en' }),
    ).rejects.toThrow(/above 25 megapixels/);
    expect(tesseractLanguage('ja-JP')).toBe('jpn');
    expect(tesseractLanguage('en')).toBe('eng');
  });
});

describe('sharp upscale', () => {
  const upscaler = new SharpUpscaleEngine();

  it('doubles and quadruples a 64x48 image into a PNG of the right size', async () => {
    const image = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3366cc' } })
      .jpeg()
      .toBuffer();
    for (const [scale, model] of [
      [2, 'fast'],
      [4, 'quality'],
    ] as const) {
      const result = await upscaler.upscale(
        { bytes: new Uint8Array(image), contentType: 'image/jpeg' },
        { scale, model },
      );
      expect(result.contentType).toBe('image/png');
      expect(result.originalSize).toBe('64x48');
      expect(result.upscaledSize).toBe(`${64 * scale}x${48 * scale}`);
      const metadata = await sharp(result.bytes).metadata();
      expect([metadata.format, metadata.width, metadata.height]).toEqual(['png', 64 * scale, 48 * scale]);
    }
  });

  it('refuses an output above 64 megapixels and undecodable input, not retryable', async () => {
    const large = await sharp({ create: { width: 5000, height: 4000, channels: 3, background: 'white' } })
      .jpeg()
      .toBuffer();
    const refused = upscaler.upscale(
      { bytes: new Uint8Array(large), contentType: 'image/jpeg' },
      { scale: 2, model: 'fast' },
    );
    await expect(refused).rejects.toThrow(/above 64 megapixels/);
    await expect(refused).rejects.toMatchObject({ retryable: false });
    await expect(
      upscaler.upscale({ bytes: new Uint8Array([1, 2, 3]), contentType: 'image/png' }, { scale: 2, model: 'fast' }),
    ).rejects.toBeInstanceOf(EngineError);
  });
});

describe('eSpeak NG speech', () => {
  const speech = new EspeakSpeechEngine();
  afterAll(() => speech.close());

  it('speaks an English sentence as MP3 whose frames give a plausible duration', async () => {
    const result = await speech.speak({ text: 'The durable engine finished the job.', voice: 'en-us', speed: 1 });
    expect(result.contentType).toBe('audio/mpeg');
    const mp3 = mp3Duration(result.bytes);
    expect(mp3.sampleRate).toBe(22050);
    expect(mp3.seconds).toBeGreaterThan(0.5);
    expect(mp3.seconds).toBeLessThan(10);
    // lamejs pads the last frame and adds its encoder delay: a few frames more than the samples spoken.
    expect(Math.abs(mp3.seconds - result.durationSeconds)).toBeLessThan(0.2);
  });

  it('speaks faster when asked, and speaks Japanese kana', async () => {
    const text = 'Speed changes the rate of speech.';
    const normal = await speech.speak({ text, voice: 'en-gb', speed: 1 });
    const fast = await speech.speak({ text, voice: 'en-gb', speed: 2 });
    expect(fast.durationSeconds).toBeLessThan(normal.durationSeconds * 0.7);
    const japanese = await speech.speak({ text: 'こんにちは、せかい。', voice: '', language: 'ja', speed: 1 });
    expect(mp3Duration(japanese.bytes).seconds).toBeGreaterThan(0.5);
    expect(espeakVoice({ voice: '', language: 'ja-JP' })).toBe('ja');
    expect([espeakRate(0.25), espeakRate(1), espeakRate(4)]).toEqual([80, 175, 450]);
  });

  it('refuses kanji, unknown voices and empty text, not retryable', async () => {
    await expect(speech.speak({ text: '今日は', voice: 'ja', speed: 1 })).rejects.toMatchObject({ retryable: false });
    await expect(speech.speak({ text: 'Hello', voice: 'xx-nope', speed: 1 })).rejects.toThrow(/no voice/);
    await expect(speech.speak({ text: '  ', voice: 'en-us', speed: 1 })).rejects.toMatchObject({ retryable: false });
  });
});

describe('sniffImage', () => {
  it('accepts PNG, JPEG, WebP and GIF by their content, with their size', async () => {
    const base = sharp({ create: { width: 30, height: 20, channels: 3, background: 'red' } });
    for (const [format, mime] of [
      ['png', 'image/png'],
      ['jpeg', 'image/jpeg'],
      ['webp', 'image/webp'],
      ['gif', 'image/gif'],
    ] as const) {
      const bytes = await base.clone().toFormat(format).toBuffer();
      expect(await sniffImage(bytes)).toEqual({ mime, width: 30, height: 20 });
    }
  });

  it('refuses other formats, text, SVG and garbage', async () => {
    const tiff = await sharp({ create: { width: 4, height: 4, channels: 3, background: 'red' } })
      .tiff()
      .toBuffer();
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>');
    const pngSignatureOnly = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);
    for (const bytes of [tiff, svg, pngSignatureOnly, Buffer.from('hello'), Buffer.alloc(0)]) {
      expect(await sniffImage(bytes)).toBeNull();
    }
  });
});
