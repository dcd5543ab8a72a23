/**
 * Every media engine of a deployment, by capability and id: the hosted ones it has keys for (./providers/index.ts),
 * then the local ones, which need no key and serve as the last fallback (and alone under `npm start` without keys):
 * espeak-ng speech, tesseract OCR (en, ja), sharp upscaling and flood-fill background removal. Image, sound effect,
 * transcription, music and video generation have no local engine: without a provider they are unavailable.
 */
import type { AsyncMediaKind, SyncMediaKind } from '../../../common/media.ts';
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

/**
 * Every media kind: the capability (of `MediaEngines`) whose engines serve it, and what to configure when this
 * deployment has none. The API answers 503 with it (api/gateway/routes/media/service.ts) and the start banner lists it.
 */
export const mediaKinds: Record<SyncMediaKind | AsyncMediaKind, { engines: keyof MediaEngines; configure: string }> = {
  tts: { engines: 'speech', configure: 'OPENAI_API_KEY or ELEVENLABS_API_KEY' },
  speech: { engines: 'speech', configure: 'OPENAI_API_KEY or ELEVENLABS_API_KEY' },
  image: { engines: 'images', configure: 'OPENAI_API_KEY or REPLICATE_API_TOKEN' },
  'remove-bg': { engines: 'backgroundRemoval', configure: 'REPLICATE_API_TOKEN' },
  upscale: { engines: 'upscale', configure: 'REPLICATE_API_TOKEN' },
  ocr: { engines: 'ocr', configure: 'OPENAI_API_KEY' },
  sfx: { engines: 'soundEffects', configure: 'ELEVENLABS_API_KEY' },
  stt: { engines: 'transcription', configure: 'OPENAI_API_KEY' },
  music: { engines: 'music', configure: 'REPLICATE_API_TOKEN' },
  video: { engines: 'video', configure: 'REPLICATE_API_TOKEN' },
};

/** One line for the start banner: each media kind with the engines serving it, or what it lacks (`tts` is speech). */
export function mediaAvailability(engines: MediaEngines): string {
  return Object.entries(mediaKinds)
    .filter(([kind]) => kind !== 'tts')
    .map(([kind, { engines: capability, configure }]) => {
      const available = engines[capability];
      return available.size > 0 ? `${kind} (${[...available.keys()].join(', ')})` : `${kind} off (${configure})`;
    })
    .join(', ');
}
