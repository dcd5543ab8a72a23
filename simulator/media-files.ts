/**
 * Real, small media files for the simulated media providers, built without any codec:
 *
 * - PNG: a solid-colour image of the requested size made with sharp, its colour derived from the prompt.
 * - MP3: an ID3v2.4 tag then silent MPEG-1 Layer III frames (44.1 kHz, 32 kbit/s, mono: 104-byte frames of 1152
 *   samples whose side information is all zeros, which decoders play as silence). The tag carries the text that was
 *   "spoken" in a `TXXX:tessera-transcript` frame, so the simulated transcription of a simulated speech file gives
 *   the text back.
 * - MP4: a real H.264 video in one colour made by the system's ffmpeg (`simulatedVideo`), or without ffmpeg an ISO
 *   BMFF skeleton — `ftyp` (isom), a `moov` holding only an `mvhd` with the requested duration, and an empty `mdat`.
 *   Players and `file-type` recognise the skeleton as MP4; it has no tracks, so it shows nothing.
 * - WAV: a PCM header and silent 16-bit mono samples (OpenAI speech's `response_format: wav`).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';

const run = promisify(execFile);

/** The description of the ID3 frame that carries the spoken text. */
export const transcriptFrameDescription = 'tessera-transcript';

const mp3FrameBytes = 104;
const mp3FrameSamples = 1152;
const mp3SampleRate = 44_100;

/** A PNG of `width`×`height` in one colour taken from the prompt's hash. */
export async function simulatedPng(prompt: string, width: number, height: number): Promise<Buffer> {
  const [red = 0, green = 0, blue = 0] = createHash('sha256').update(prompt).digest();
  return sharp({ create: { width, height, channels: 3, background: { r: red, g: green, b: blue } } })
    .png({ compressionLevel: 9 })
    .toBuffer();
}

/** An MP3 of about `seconds` of silence, tagged with `text` when given. */
export function simulatedMp3(seconds: number, text?: string): Buffer {
  const frames = Math.max(1, Math.ceil((seconds * mp3SampleRate) / mp3FrameSamples));
  const frame = Buffer.alloc(mp3FrameBytes);
  // Sync, MPEG-1, Layer III, no CRC; 32 kbit/s, 44.1 kHz, no padding; mono.
  frame.set([0xff, 0xfb, 0x10, 0xc0]);
  const audio = Buffer.alloc(frames * mp3FrameBytes);
  for (let index = 0; index < frames; index++) frame.copy(audio, index * mp3FrameBytes);
  return text === undefined ? audio : Buffer.concat([id3Tag(text), audio]);
}

/** The duration an MP3 from `simulatedMp3` plays for. */
export function simulatedMp3Seconds(seconds: number): number {
  const frames = Math.max(1, Math.ceil((seconds * mp3SampleRate) / mp3FrameSamples));
  return (frames * mp3FrameSamples) / mp3SampleRate;
}

/** The text a `simulatedMp3` tag carries, if the bytes start with one. */
export function transcriptOf(bytes: Buffer): string | undefined {
  if (bytes.length < 10 || bytes.toString('latin1', 0, 3) !== 'ID3') return undefined;
  const tagEnd = 10 + syncsafeValue(bytes, 6);
  let offset = 10;
  while (offset + 10 <= tagEnd && offset + 10 <= bytes.length) {
    const id = bytes.toString('latin1', offset, offset + 4);
    const size = syncsafeValue(bytes, offset + 4);
    const content = bytes.subarray(offset + 10, offset + 10 + size);
    if (id === 'TXXX' && content[0] === 3) {
      const [description, value] = content.subarray(1).toString('utf8').split('\0');
      if (description === transcriptFrameDescription && value !== undefined) return value;
    }
    if (size === 0) break;
    offset += 10 + size;
  }
  return undefined;
}

/** A 16-bit mono 24 kHz WAV of silence. */
export function simulatedWav(seconds: number): Buffer {
  const sampleRate = 24_000;
  const dataBytes = Math.max(2, Math.round(seconds * sampleRate) * 2);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(dataBytes, 40);
  return Buffer.concat([header, Buffer.alloc(dataBytes)]);
}

/** An MP4 skeleton (ftyp + moov/mvhd + empty mdat) that declares `seconds` of duration. */
export function simulatedMp4(seconds: number): Buffer {
  const ftyp = box('ftyp', Buffer.concat([ascii('isom'), uint32(0x200), ascii('isomiso2mp41')]));
  const timescale = 1000;
  const mvhd = Buffer.alloc(100);
  // version 0, flags 0, creation and modification time 0
  mvhd.writeUInt32BE(timescale, 12);
  mvhd.writeUInt32BE(Math.round(seconds * timescale), 16);
  mvhd.writeUInt32BE(0x00010000, 20); // rate 1.0
  mvhd.writeUInt16BE(0x0100, 24); // volume 1.0
  // The unity matrix.
  mvhd.writeUInt32BE(0x00010000, 36);
  mvhd.writeUInt32BE(0x00010000, 52);
  mvhd.writeUInt32BE(0x40000000, 68);
  mvhd.writeUInt32BE(1, 96); // next track id
  return Buffer.concat([ftyp, box('moov', box('mvhd', mvhd)), box('mdat', Buffer.alloc(0))]);
}

function id3Tag(text: string): Buffer {
  const content = Buffer.concat([Buffer.from([3]), Buffer.from(`${transcriptFrameDescription}\0${text}`, 'utf8')]);
  const frameHeader = Buffer.concat([ascii('TXXX'), syncsafe(content.length), Buffer.from([0, 0])]);
  const frames = Buffer.concat([frameHeader, content]);
  return Buffer.concat([ascii('ID3'), Buffer.from([4, 0, 0]), syncsafe(frames.length), frames]);
}

function syncsafe(value: number): Buffer {
  return Buffer.from([(value >> 21) & 0x7f, (value >> 14) & 0x7f, (value >> 7) & 0x7f, value & 0x7f]);
}

function syncsafeValue(bytes: Buffer, offset: number): number {
  return (
    ((bytes[offset]! & 0x7f) << 21) |
    ((bytes[offset + 1]! & 0x7f) << 14) |
    ((bytes[offset + 2]! & 0x7f) << 7) |
    (bytes[offset + 3]! & 0x7f)
  );
}

function box(type: string, payload: Buffer): Buffer {
  return Buffer.concat([uint32(8 + payload.length), ascii(type), payload]);
}

function uint32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32BE(value);
  return buffer;
}

function ascii(text: string): Buffer {
  return Buffer.from(text, 'latin1');
}

/**
 * A real video: `seconds` of 320×180 H.264 at 5 frames a second in one colour taken from the prompt's hash, encoded
 * by the system's ffmpeg (so a thumbnail can be cut from it); the MP4 skeleton when ffmpeg is missing.
 */
export async function simulatedVideo(seconds: number, prompt: string): Promise<Buffer> {
  const colour = createHash('sha256').update(prompt).digest('hex').slice(0, 6);
  const directory = await mkdtemp(join(tmpdir(), 'simulator-video-'));
  const output = join(directory, 'video.mp4');
  try {
    await run(
      process.env.FFMPEG_PATH || 'ffmpeg',
      [
        ...['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi'],
        ...['-i', `color=c=0x${colour}:s=320x180:d=${seconds}:r=5`],
        ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', output],
      ],
      { timeout: 30_000 },
    );
    return await readFile(output);
  } catch {
    return simulatedMp4(seconds);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}
