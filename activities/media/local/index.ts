/**
 * Every media engine of a deployment, by capability and id: the hosted ones it has keys for (./providers/index.ts),
 * then the local ones, which need no key and serve as the last fallback (and alone under `npm start` without keys):
 * espeak-ng speech, tesseract OCR (en, ja), sharp upscaling and flood-fill background removal. Image, sound effect,
 * transcription, music and video generation have no local engine: without a provider they are unavailable.
 */
import type { MediaEngines } from '../media-activities.ts';
import type { HostedMediaEngines } from '../providers/index.ts';
import { EspeakSpeechEngine } from './espeak-speech.ts';
import { FloodFillBackgroundEngine } from './flood-fill-background.ts';
import { SharpUpscaleEngine } from './sharp-upscale.ts';
import { TesseractOcrEngine } from './tesseract-ocr.ts';

export function createMediaEngines(hosted: HostedMediaEngines): MediaEngines {
  const byId = <Engine extends { readonly id: string }>(engines: Engine[]) =>
    new Map(engines.map((engine) => [engine.id, engine]));
  return {
    speech: byId([...hosted.speech, new EspeakSpeechEngine()]),
    images: byId(hosted.images),
    backgroundRemoval: byId([...hosted.backgroundRemoval, new FloodFillBackgroundEngine()]),
    upscale: byId([...hosted.upscale, new SharpUpscaleEngine()]),
    ocr: byId([...hosted.ocr, new TesseractOcrEngine()]),
    soundEffects: byId(hosted.soundEffects),
    transcription: byId(hosted.transcription),
    video: byId(hosted.video),
    music: byId(hosted.music),
  };
}

/** What to configure for a kind that has no engine. */
const missing: Record<string, string> = {
  image: 'OPENAI_API_KEY or REPLICATE_API_TOKEN',
  sfx: 'ELEVENLABS_API_KEY',
  stt: 'OPENAI_API_KEY',
  music: 'REPLICATE_API_TOKEN',
  video: 'REPLICATE_API_TOKEN',
};

/** One line for the start banner: each media kind with the engines serving it, or what it lacks. */
export function mediaAvailability(engines: MediaEngines): string {
  const kinds: Array<[string, ReadonlyMap<string, unknown>]> = [
    ['speech', engines.speech],
    ['image', engines.images],
    ['remove-bg', engines.backgroundRemoval],
    ['upscale', engines.upscale],
    ['ocr', engines.ocr],
    ['sfx', engines.soundEffects],
    ['stt', engines.transcription],
    ['music', engines.music],
    ['video', engines.video],
  ];
  return kinds
    .map(([kind, available]) =>
      available.size > 0 ? `${kind} (${[...available.keys()].join(', ')})` : `${kind} off (${missing[kind]})`,
    )
    .join(', ');
}
