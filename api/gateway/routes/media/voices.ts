/**
 * The spec's seven /tts voices (gateway spec 4.5) and the engines that speak them, in fallback order. Engine A is
 * ElevenLabs (multilingual premade voices, which read Japanese), engine B OpenAI, engine C local espeak-ng. A voice
 * whose own engine fails falls over to the others with the nearest voice; espeak-ng is always last (it reads
 * English and Japanese kana; text with kanji is refused by it). The three Japanese engine-A voices are named
 * `ja_female_1` (the default), `ja_male_1` and `ja_female_2`.
 */
import type { EngineVoice } from '../../../../common/media.ts';

const elevenLabs = {
  rachel: '21m00Tcm4TlvDq8ikWAM',
  adam: 'pNInz6obpgDQGcFmaJgB',
  bella: 'EXAVITQu4vr4xnkWmHLe',
};

const ja = (engine: string, voice: string): EngineVoice => ({ engine, voice, language: 'ja' });
const en = (engine: string, voice: string): EngineVoice => ({ engine, voice, language: 'en' });

export const ttsVoices: Record<string, EngineVoice[]> = {
  ja_female_1: [ja('elevenlabs', elevenLabs.rachel), ja('openai', 'nova'), ja('espeak-ng', 'ja')],
  ja_male_1: [ja('elevenlabs', elevenLabs.adam), ja('openai', 'onyx'), ja('espeak-ng', 'ja')],
  ja_female_2: [ja('elevenlabs', elevenLabs.bella), ja('openai', 'shimmer'), ja('espeak-ng', 'ja')],
  female_calm: [ja('espeak-ng', 'ja')],
  male_calm: [ja('espeak-ng', 'ja')],
  nova: [en('openai', 'nova'), en('elevenlabs', elevenLabs.rachel), en('espeak-ng', 'en-us')],
  alloy: [en('openai', 'alloy'), en('elevenlabs', elevenLabs.adam), en('espeak-ng', 'en-us')],
};

export const defaultTtsVoice = 'ja_female_1';

/** The OpenAI-compatible endpoint's voices: OpenAI first, then ElevenLabs' nearest, then espeak-ng. */
export const openAIVoices = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'onyx', 'nova', 'sage', 'shimmer'];
const maleOpenAIVoices = new Set(['ash', 'echo', 'fable', 'onyx']);

export function openAIVoiceEngines(voice: string): EngineVoice[] {
  const nearest = maleOpenAIVoices.has(voice) ? elevenLabs.adam : elevenLabs.rachel;
  return [en('openai', voice), en('elevenlabs', nearest), en('espeak-ng', 'en-us')];
}

/** /tts: 1 credit per 100 characters, started. */
export const ttsCredits = (text: string) => Math.max(1, Math.ceil(text.length / 100));
/** /v1/audio/speech (1 to 5): 1 credit per 1,000 characters, started; 4,096 characters cost 5. */
export const speechCredits = (text: string) => Math.min(5, Math.max(1, Math.ceil(text.length / 1000)));
