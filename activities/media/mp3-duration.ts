/**
 * The playing time of an MP3, by walking its MPEG audio frames (after an ID3v2 tag) and adding up their samples.
 * Exact for constant and variable bit rates alike; a trailing ID3v1 tag or junk ends the walk. No decoding.
 */

const bitrates = {
  mpeg1: {
    1: [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
    2: [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
    3: [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  },
  mpeg2: {
    1: [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
    2: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    3: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
  },
} as const;

const sampleRates = [44_100, 48_000, 32_000] as const;

interface FrameHeader {
  bytes: number;
  samples: number;
  sampleRate: number;
}

/** Seconds of audio in `bytes`, or undefined when no MPEG audio frame is found. */
export function mp3DurationSeconds(bytes: Uint8Array): number | undefined {
  let offset = id3v2Length(bytes);
  let seconds = 0;
  let frames = 0;
  while (offset + 4 <= bytes.length) {
    const header = frameHeader(bytes, offset);
    if (header === undefined) break;
    seconds += header.samples / header.sampleRate;
    frames += 1;
    offset += header.bytes;
  }
  return frames === 0 ? undefined : seconds;
}

function id3v2Length(bytes: Uint8Array): number {
  if (bytes.length < 10 || bytes[0] !== 0x49 || bytes[1] !== 0x44 || bytes[2] !== 0x33) return 0;
  const size = ((bytes[6]! & 0x7f) << 21) | ((bytes[7]! & 0x7f) << 14) | ((bytes[8]! & 0x7f) << 7) | (bytes[9]! & 0x7f);
  const footer = (bytes[5]! & 0x10) !== 0 ? 10 : 0;
  return 10 + size + footer;
}

function frameHeader(bytes: Uint8Array, offset: number): FrameHeader | undefined {
  const [b0, b1, b2] = [bytes[offset]!, bytes[offset + 1]!, bytes[offset + 2]!];
  if (b0 !== 0xff || (b1 & 0xe0) !== 0xe0) return undefined;
  const versionBits = (b1 >> 3) & 3; // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
  const layerBits = (b1 >> 1) & 3; // 3: Layer I, 2: Layer II, 1: Layer III
  const bitrateIndex = b2 >> 4;
  const sampleRateIndex = (b2 >> 2) & 3;
  if (versionBits === 1 || layerBits === 0 || bitrateIndex === 0 || bitrateIndex === 15 || sampleRateIndex === 3) {
    return undefined;
  }
  const mpeg1 = versionBits === 3;
  const layer = (4 - layerBits) as 1 | 2 | 3;
  const bitrate = bitrates[mpeg1 ? 'mpeg1' : 'mpeg2'][layer][bitrateIndex]! * 1000;
  const sampleRate = sampleRates[sampleRateIndex]! / (mpeg1 ? 1 : versionBits === 2 ? 2 : 4);
  const padding = (b2 >> 1) & 1;
  if (layer === 1) {
    return { bytes: (Math.floor((12 * bitrate) / sampleRate) + padding) * 4, samples: 384, sampleRate };
  }
  const samples = layer === 3 && !mpeg1 ? 576 : 1152;
  return { bytes: Math.floor(((samples / 8) * bitrate) / sampleRate) + padding, samples, sampleRate };
}
