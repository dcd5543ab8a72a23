/**
 * The hosted media engines this deployment has keys for, per capability, in fallback order (the first serves, the
 * next takes over on a retryable failure: activities/media/fallback.ts). OpenAI is configured exactly as for
 * completions (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, read from the environment as config/load-catalogue.ts does);
 * ElevenLabs and Replicate by their settings. An engine without its key is absent, not failing.
 */
import type { Settings } from '../../../config/settings.ts';
import type {
  BackgroundRemovalEngine,
  ImageEngine,
  MusicEngine,
  OcrEngine,
  SoundEffectEngine,
  SpeechEngine,
  TranscriptionEngine,
  UpscaleEngine,
  VideoEngine,
} from '../engine.ts';
import { createElevenLabsEngine } from './elevenlabs.ts';
import { createOpenAIMediaEngine } from './openai-media.ts';
import { createReplicateImageEngine, createReplicateMusicEngine, createReplicateVideoEngine } from './replicate.ts';

export const defaultOpenAIBaseUrl = 'https://api.openai.com/v1';

export interface HostedMediaEngines {
  speech: SpeechEngine[];
  images: ImageEngine[];
  backgroundRemoval: BackgroundRemovalEngine[];
  upscale: UpscaleEngine[];
  ocr: OcrEngine[];
  transcription: TranscriptionEngine[];
  soundEffects: SoundEffectEngine[];
  music: MusicEngine[];
  video: VideoEngine[];
}

type MediaSettings = Pick<
  Settings,
  | 'ELEVENLABS_API_KEY'
  | 'ELEVENLABS_BASE_URL'
  | 'REPLICATE_API_TOKEN'
  | 'REPLICATE_BASE_URL'
  | 'REPLICATE_MUSIC_MODEL'
  | 'REPLICATE_VIDEO_MODEL'
  | 'REPLICATE_REMOVE_BG_MODEL'
  | 'REPLICATE_UPSCALE_MODEL'
>;

export function createHostedMediaEngines(
  settings: MediaSettings,
  environment: Record<string, string | undefined> = process.env,
): HostedMediaEngines {
  const engines: HostedMediaEngines = {
    speech: [],
    images: [],
    backgroundRemoval: [],
    upscale: [],
    ocr: [],
    transcription: [],
    soundEffects: [],
    music: [],
    video: [],
  };
  const openAIKey = environment.OPENAI_API_KEY?.trim();
  if (openAIKey) {
    const openAI = createOpenAIMediaEngine({
      apiKey: openAIKey,
      baseUrl: (environment.OPENAI_BASE_URL?.trim() || defaultOpenAIBaseUrl).replace(/\/+$/, ''),
    });
    engines.speech.push(openAI);
    engines.images.push(openAI);
    engines.transcription.push(openAI);
    engines.ocr.push(openAI);
  }
  if (settings.ELEVENLABS_API_KEY) {
    const elevenLabs = createElevenLabsEngine({
      apiKey: settings.ELEVENLABS_API_KEY,
      baseUrl: settings.ELEVENLABS_BASE_URL,
    });
    engines.speech.push(elevenLabs);
    engines.soundEffects.push(elevenLabs);
  }
  if (settings.REPLICATE_API_TOKEN) {
    const replicate = { apiToken: settings.REPLICATE_API_TOKEN, baseUrl: settings.REPLICATE_BASE_URL };
    engines.music.push(createReplicateMusicEngine({ ...replicate, model: settings.REPLICATE_MUSIC_MODEL }));
    engines.video.push(createReplicateVideoEngine({ ...replicate, model: settings.REPLICATE_VIDEO_MODEL }));
    const images = createReplicateImageEngine({
      ...replicate,
      removeBackgroundModel: settings.REPLICATE_REMOVE_BG_MODEL,
      upscaleModel: settings.REPLICATE_UPSCALE_MODEL,
    });
    engines.images.push(images);
    engines.backgroundRemoval.push(images);
    engines.upscale.push(images);
  }
  return engines;
}
