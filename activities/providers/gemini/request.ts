/** Maps a provider-neutral request onto the Gemini generateContent wire body. */
import { z } from 'zod';
import type { ChatMessage, ResponseFormat, Tool, ToolChoice, UserContent } from '../../../common/chat.ts';
import { thinkingBudget } from '../reasoning.ts';
import type { ProviderRequest } from '../types.ts';
import { hasNoProperties, toGeminiSchema } from './schema.ts';

/**
 * Google's documented stand-in for a thought signature. Gemini 3 rejects a replayed function call without
 * one; the OpenAI message format has nowhere to keep the real signature between turns.
 */
const replayedThoughtSignature = 'skip_thought_signature_validator';

interface GeminiPart {
  text?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { fileUri: string; mimeType: string };
  functionCall?: { name: string; args: Record<string, unknown> };
  functionResponse?: { name: string; response: { content: unknown } };
  thoughtSignature?: string;
}

interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}

interface GeminiFunctionDeclaration {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
}

interface GeminiGenerationConfig {
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  stopSequences?: string[];
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  responseMimeType?: string;
  responseSchema?: Record<string, unknown>;
  thinkingConfig?: { includeThoughts: boolean; thinkingBudget: number };
}

/** The generateContent request body (the model goes in the URL); undefined fields are dropped. */
export interface GeminiGenerateContentBody {
  contents: GeminiContent[];
  systemInstruction?: { parts: Array<{ text: string }> };
  tools?: Array<{ functionDeclarations: GeminiFunctionDeclaration[] }>;
  toolConfig?: { functionCallingConfig: { mode: 'AUTO' | 'ANY' | 'NONE'; allowedFunctionNames?: string[] } };
  generationConfig: GeminiGenerationConfig;
}

/** Builds the request body. Gemini has no `user` or parallel-call switch; those two are dropped. */
export function toGeminiBody(request: ProviderRequest): GeminiGenerateContentBody {
  const system = request.messages.flatMap((message) =>
    (message.role === 'system' || message.role === 'developer') && message.content !== '' ? [message.content] : [],
  );
  const hasTools = request.tools !== undefined && request.tools.length > 0;
  return {
    contents: toGeminiContents(request.messages),
    systemInstruction: system.length > 0 ? { parts: [{ text: system.join('\n\n') }] } : undefined,
    tools: hasTools ? [{ functionDeclarations: (request.tools ?? []).map(toFunctionDeclaration) }] : undefined,
    toolConfig: hasTools ? toToolConfig(request.toolChoice) : undefined,
    generationConfig: {
      maxOutputTokens: request.maxTokens,
      temperature: request.temperature,
      topP: request.topP,
      topK: request.topK,
      stopSequences: request.stop !== undefined && request.stop.length > 0 ? request.stop : undefined,
      seed: request.seed,
      presencePenalty: request.presencePenalty,
      frequencyPenalty: request.frequencyPenalty,
      ...responseFormatConfig(request.responseFormat),
      thinkingConfig: thinkingConfigOf(request),
    },
  };
}

/**
 * Gemini 2.5 models think whether asked or not, but return their thought summaries (parts marked `thought`) only
 * with `includeThoughts`; a reasoning effort asks for them and sets the budget. Without one the model's own
 * default stands (2.5 Pro cannot turn thinking off, so `none` does not try).
 */
function thinkingConfigOf(request: ProviderRequest): GeminiGenerationConfig['thinkingConfig'] {
  const budget = thinkingBudget(request.reasoningEffort);
  return budget === undefined ? undefined : { includeThoughts: true, thinkingBudget: budget };
}

/**
 * Converts the conversation. Gemini's function responses name the function, not the call, so each tool
 * message looks up the name of the call it answers; consecutive turns of one role merge, as a model turn's
 * parallel calls must be answered in one user turn.
 */
function toGeminiContents(messages: ChatMessage[]): GeminiContent[] {
  const functionNameByCallId = new Map<string, string>();
  const contents: GeminiContent[] = [];
  for (const message of messages) {
    const content = toGeminiContent(message, functionNameByCallId);
    if (content === undefined || content.parts.length === 0) continue;
    const previous = contents.at(-1);
    if (previous?.role === content.role) previous.parts.push(...content.parts);
    else contents.push(content);
  }
  for (const content of contents) {
    const firstCall = content.parts.find((part) => part.functionCall !== undefined);
    if (firstCall !== undefined) firstCall.thoughtSignature = replayedThoughtSignature;
  }
  return contents;
}

function toGeminiContent(message: ChatMessage, functionNameByCallId: Map<string, string>): GeminiContent | undefined {
  switch (message.role) {
    case 'system':
    case 'developer':
      return undefined;
    case 'user':
      return { role: 'user', parts: userParts(message.content) };
    case 'assistant': {
      const calls = (message.tool_calls ?? []).map((call): GeminiPart => {
        functionNameByCallId.set(call.id, call.function.name);
        return { functionCall: { name: call.function.name, args: parseArguments(call.function.arguments) } };
      });
      return { role: 'model', parts: [...textParts(message.content ?? ''), ...calls] };
    }
    case 'tool': {
      // An unknown id can only come from a hand-written history; the id is the best name left.
      const name = functionNameByCallId.get(message.tool_call_id) ?? message.tool_call_id;
      return {
        role: 'user',
        parts: [{ functionResponse: { name, response: { content: parseResult(message.content) } } }],
      };
    }
  }
}

/** A user message's text and images, in order: inline base64 data, or a URL as file data. */
function userParts(content: UserContent): GeminiPart[] {
  if (typeof content === 'string') return textParts(content);
  return content.flatMap((part): GeminiPart[] =>
    part.type === 'text' ? textParts(part.text) : [imagePart(part.image_url.url)],
  );
}

/** Gemini wants a MIME type for file data too: taken from the URL's extension, JPEG when it names none. */
function imagePart(url: string): GeminiPart {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data !== null) return { inlineData: { mimeType: data[1]!, data: data[2]! } };
  const extension = /\.(png|jpe?g|gif|webp)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase();
  const mimeType = extension === undefined || extension === 'jpg' ? 'image/jpeg' : `image/${extension}`;
  return { fileData: { fileUri: url, mimeType } };
}

function textParts(text: string): GeminiPart[] {
  return text === '' ? [] : [{ text }];
}

const argumentsSchema = z.record(z.string(), z.unknown());

/** `functionCall.args` must be an object; arguments cut off mid-JSON are replaced by `{}`. */
function parseArguments(text: string): Record<string, unknown> {
  try {
    const parsed = argumentsSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : {};
  } catch {
    return {};
  }
}

/** A JSON tool result is passed as structure, so the model reads fields rather than an escaped string. */
function parseResult(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function toFunctionDeclaration(tool: Tool): GeminiFunctionDeclaration {
  const parameters = tool.function.parameters;
  return {
    name: tool.function.name,
    description: tool.function.description,
    parameters: parameters === undefined || hasNoProperties(parameters) ? undefined : toGeminiSchema(parameters),
  };
}

function toToolConfig(toolChoice: ToolChoice | undefined): GeminiGenerateContentBody['toolConfig'] {
  if (toolChoice === undefined) return undefined;
  if (toolChoice === 'auto') return { functionCallingConfig: { mode: 'AUTO' } };
  if (toolChoice === 'none') return { functionCallingConfig: { mode: 'NONE' } };
  if (toolChoice === 'required') return { functionCallingConfig: { mode: 'ANY' } };
  return { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: [toolChoice.function.name] } };
}

function responseFormatConfig(responseFormat: ResponseFormat | undefined): GeminiGenerationConfig {
  if (responseFormat === undefined || responseFormat.type === 'text') return {};
  const schema = responseFormat.type === 'json_schema' ? responseFormat.json_schema.schema : undefined;
  return {
    responseMimeType: 'application/json',
    responseSchema: schema === undefined ? undefined : toGeminiSchema(schema),
  };
}
