/**
 * `ffmpeg`: a video's thumbnail (gateway spec 2, a completed video's `thumbnail_url`): its first frame as a JPEG at
 * most 640 px wide, cut by the system's ffmpeg (Debian's `ffmpeg` package; `npm test` installs it like Chromium). The
 * hosted video models answer an MP4 only, so the thumbnail is made here. Without ffmpeg, or for a video without a
 * decodable frame, there is no thumbnail (null, with the reason logged): the video itself is never failed for it.
 * ffmpeg runs in a child process with a 30 s deadline, on a temporary copy of the video.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { MediaFile } from '../engine.ts';

const run = promisify(execFile);
const deadlineMs = 30_000;

export async function videoThumbnail(
  video: Uint8Array,
  log: (line: string) => void = (line) => console.warn(line),
): Promise<MediaFile | null> {
  const directory = await mkdtemp(join(tmpdir(), 'tessera-thumbnail-'));
  try {
    const input = join(directory, 'video.mp4');
    const output = join(directory, 'thumbnail.jpg');
    await writeFile(input, video);
    await run(
      process.env.FFMPEG_PATH || 'ffmpeg',
      [
        '-hide_banner',
        '-loglevel',
        'error',
        '-y',
        '-i',
        input,
        '-frames:v',
        '1',
        '-vf',
        "scale='min(640,iw)':-2",
        '-q:v',
        '3',
        output,
      ],
      { timeout: deadlineMs, killSignal: 'SIGKILL', maxBuffer: 1024 * 1024 },
    );
    const bytes = new Uint8Array(await readFile(output));
    return bytes.length > 0 ? { bytes, contentType: 'image/jpeg' } : null;
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT'
        ? 'ffmpeg is not installed (FFMPEG_PATH)'
        : ((error as { stderr?: string }).stderr?.trim() || String(error)).slice(0, 300);
    log(`no video thumbnail: ${reason}`);
    return null;
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}
