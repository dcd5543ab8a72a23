/**
 * The eSpeak NG thread (espeak-speech.ts starts it): eSpeak NG compiled to WebAssembly synthesizes 16-bit mono PCM at
 * 22.05 kHz, and lamejs encodes it to MP3 here too, so neither the synthesis nor the encoding (about 1 s of CPU for
 * a 4,000-character text) runs on the caller's event loop. One request at a time: eSpeak's synthesis is synchronous.
 */
import initializeEspeak from '@echogarden/espeak-ng-emscripten';
import { Mp3Encoder } from '@breezystack/lamejs';
import { serveCalls } from '../../threads/deadline-worker.ts';

export interface EspeakRequest {
  text: string;
  /** An eSpeak NG voice (`en-us`, `en-gb`, `ja`, …). */
  voice: string;
  /** Words per minute. */
  rate: number;
  kbps: number;
}

/** A refusal (`ok: false`) is the request's fault; anything unexpected is thrown and reaches the caller as such. */
export type EspeakResponse =
  { ok: true; mp3: Uint8Array; samples: number; sampleRate: number } | { ok: false; error: string };

interface EspeakInstance {
  list_voices(): Array<{ identifier: string; languages: Array<{ name: string }> }>;
  set_voice(name: string): number;
  set_rate(wordsPerMinute: number): number;
  get_samplerate(): number;
  synthesize(text: string, callback: (samples: Int16Array, events: unknown[]) => boolean): void;
}

const espeakModule = (await initializeEspeak()) as { eSpeakNGWorker: new () => EspeakInstance };
const espeak = new espeakModule.eSpeakNGWorker();
const sampleRate = espeak.get_samplerate();
/**
 * eSpeak NG selects a voice by its file name (`en-US`, `en`, `ja`), which is not always its language (`en-gb` is the
 * file `en`): both are accepted, file names first, then the languages a voice declares, in eSpeak's own order.
 */
const voiceNames = new Map<string, string>();
const voices = espeak.list_voices();
for (const voice of voices) {
  const file = voice.identifier.split('/').at(-1) ?? voice.identifier;
  voiceNames.set(file.toLowerCase(), file);
}
for (const voice of voices) {
  const file = voice.identifier.split('/').at(-1) ?? voice.identifier;
  for (const language of voice.languages) {
    if (!voiceNames.has(language.name.toLowerCase())) voiceNames.set(language.name.toLowerCase(), file);
  }
}
/** lamejs encodes in MPEG frames of 1,152 samples; larger multiples make fewer calls. */
const encodeChunk = 1152 * 16;

function speak(request: EspeakRequest): EspeakResponse {
  const voice = voiceNames.get(request.voice.toLowerCase());
  if (!voice || espeak.set_voice(voice) !== 0) {
    return { ok: false, error: `eSpeak NG has no voice "${request.voice}"` };
  }
  espeak.set_rate(request.rate);
  const encoder = new Mp3Encoder(1, sampleRate, request.kbps);
  const parts: Uint8Array[] = [];
  let samples = 0;
  const push = (encoded: Int8Array | Uint8Array) => {
    if (encoded.length > 0) parts.push(new Uint8Array(encoded.buffer, encoded.byteOffset, encoded.length).slice());
  };
  espeak.synthesize(request.text, (pcm) => {
    samples += pcm.length;
    for (let start = 0; start < pcm.length; start += encodeChunk) {
      push(encoder.encodeBuffer(pcm.subarray(start, start + encodeChunk)));
    }
    return false; // false: go on synthesizing
  });
  push(encoder.flush());
  if (samples === 0) return { ok: false, error: 'eSpeak NG produced no audio' };
  const mp3 = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    mp3.set(part, offset);
    offset += part.length;
  }
  return { ok: true, mp3, samples, sampleRate };
}

// Ready once eSpeak NG is loaded: a request's deadline starts then. The MP3 is moved to the caller, not copied.
serveCalls(speak, (response) => (response.ok ? [response.mp3.buffer as ArrayBuffer] : []));
