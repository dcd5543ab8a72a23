/**
 * ElevenLabs as an engine (`elevenlabs`): speech (`POST /v1/text-to-speech/{voice_id}`) and sound effects
 * (`POST /v1/sound-generation`), both answering MP3 (`output_format=mp3_44100_128`), authenticated by `xi-api-key`.
 * Settings: `ELEVENLABS_API_KEY`, `ELEVENLABS_BASE_URL` (default https://api.elevenlabs.io, without `/v1`).
 *
 * ElevenLabs takes speed as `voice_settings.speed` between 0.7 and 1.2, so the spec's 0.25–4 is clamped; it enforces
 * a language (`language_code`) only with its Turbo and Flash v2.5 models, so only those are sent one. Sound effects
 * last 0.5 to 30 seconds.
 */
import type { EngineOptions, SoundEffectEngine, SpeechEngine, SpeechRequest } from '../engine.ts';
import { exchange, joinUrl, mediaUpstream, readFile, withDuration, type MediaHttpConfig } from './http.ts';

export interface ElevenLabsConfig extends MediaHttpConfig {
  /** `https://api.elevenlabs.io`. */
  baseUrl: string;
  apiKey: string;
  /** Default `eleven_multilingual_v2`. */
  speechModel?: string;
  /** Default `eleven_text_to_sound_v2`. */
  soundModel?: string;
  /** Default `mp3_44100_128`. */
  outputFormat?: string;
}

export type ElevenLabsEngine = SpeechEngine & SoundEffectEngine;

export function createElevenLabsEngine(config: ElevenLabsConfig): ElevenLabsEngine {
  const id = 'elevenlabs';
  const upstream = mediaUpstream(id, config);
  const headers = { 'xi-api-key': config.apiKey, accept: 'audio/mpeg' };
  const speechModel = config.speechModel ?? 'eleven_multilingual_v2';
  const soundModel = config.soundModel ?? 'eleven_text_to_sound_v2';
  const query = `?output_format=${encodeURIComponent(config.outputFormat ?? 'mp3_44100_128')}`;

  return {
    id,

    async speak(request: SpeechRequest, options?: EngineOptions) {
      const enforcesLanguage = /(turbo|flash)_v2_5/.test(speechModel);
      const body = {
        text: request.text,
        model_id: speechModel,
        ...(enforcesLanguage && request.language !== undefined
          ? { language_code: request.language.split('-')[0] }
          : {}),
        voice_settings: { speed: Math.min(1.2, Math.max(0.7, request.speed)) },
      };
      const path = `v1/text-to-speech/${encodeURIComponent(request.voice)}${query}`;
      return withDuration(
        await exchange(
          upstream,
          { method: 'POST', url: joinUrl(config.baseUrl, path), headers, body },
          (response) => readFile(id, response, 'audio/'),
          options?.signal,
        ),
      );
    },

    async soundEffect(request: { prompt: string; durationSeconds: number }, options?: EngineOptions) {
      const durationSeconds = Math.min(30, Math.max(0.5, request.durationSeconds));
      const body = {
        text: request.prompt,
        model_id: soundModel,
        duration_seconds: durationSeconds,
        prompt_influence: 0.3,
      };
      const file = await exchange(
        upstream,
        { method: 'POST', url: joinUrl(config.baseUrl, `v1/sound-generation${query}`), headers, body },
        (response) => readFile(id, response, 'audio/'),
        options?.signal,
      );
      return { ...file, durationSeconds };
    },
  };
}
