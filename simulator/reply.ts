/**
 * The simulator's deterministic "model": what it answers is a function of the request alone, described
 * protocol-neutrally so each wire protocol only renders it.
 *
 * Tool use:
 * - Scripted: a user message carrying `[[call <tool> <json arguments>]]` directives asks for those calls, one per
 *   round, in order (the nth model call after the message asks for the nth directive), then answers in text. The
 *   script names any tool, offered or not (a call to a tool that was not offered is what a confused model does),
 *   but is followed only while some tools are offered and `tool_choice` is not `none`. Tests drive chat turns so.
 * - Otherwise under `tool_choice: auto` the model calls the first offered tool the user's last message names (its
 *   name, or a word of it of four letters or more: "weather" names `get_weather`), with arguments sampled from its
 *   schema; a message naming none is answered in text. `required` calls the first tool, a named choice that tool.
 * - After a tool result it answers in text, quoting the result.
 *
 * Reasoning: a request that turns reasoning on, by its own protocol's switch, is answered with reasoning first,
 * rendered as that protocol really sends it:
 * - OpenAI-compatible: a model whose id contains `reasoner` (as DeepSeek's `deepseek-reasoner`, which always
 *   reasons), in `reasoning_content`. `reasoning_effort` alone adds none: OpenAI's Chat Completions return no
 *   reasoning text.
 * - Anthropic: `thinking` of type `enabled` or `adaptive`, as a thinking block with a signature before the answer.
 * - Gemini: `generationConfig.thinkingConfig.includeThoughts`, as parts marked `thought: true`.
 * The reasoning is `Simulated reasoning of <model> about: <the quoted user message or tool result>`, a word per
 * token, before the text or the tool call. Its tokens count as completion tokens; max_tokens cuts only the answer.
 *
 * Structured output: a request asking for JSON by its protocol's own means (OpenAI-compatible `response_format`
 * `json_schema` or `json_object`; Anthropic, which has no such field, the system instruction our adapter writes,
 * `Respond with a single JSON object only… It must match this JSON schema: <schema>`; Gemini
 * `generationConfig.responseMimeType: application/json` with `responseSchema` or `responseJsonSchema`) gets a text
 * answer that is one JSON value (./structured.ts), generated from the schema and the last user message:
 * - object: every property in `properties`, required or not, recursively;
 * - integer/number with a `description`: a relevance score. Count the distinct significant words of the user
 *   message (lowercased `[a-z0-9]+` runs of 3+ characters, minus a few stop words) that occur among the words of
 *   the property's name and description, a word also matching one that shares its first 5 letters ("programming",
 *   "program"). Score = min(maximum, minimum + count × ceil((maximum − minimum) / 4)), the range defaulting to
 *   0..10 (so 0, 3, 6, 9, 10). Without a description: the minimum, or 1 when there is none;
 * - string: an enum's value that overlaps the message most (the first on ties); otherwise
 *   `Simulated <property name> about: <the message's first 6 words>`;
 * - array: `minItems` items (default 1, at most `maxItems`) from `items`; free-text string items are told apart
 *   by a ` (1)`, ` (2)`… suffix;
 * - boolean `true`, null `null`, `const` its value, `anyOf`/`oneOf` the first non-null alternative.
 * `json_object` without a schema answers `{"reply": "<the usual sentence>"}`. A router that sends
 * `{scores: {<agent>: {type: integer, minimum: 0, maximum: 10, description: <what the agent does>}}}` thus sees the
 * agent whose name and description share most words with the message score highest.
 *
 * Agent loops: a user message anywhere in the conversation carrying `[[iterations N]]` (N ≥ 1) or
 * `[[iterations forever]]` makes text answers (not JSON ones) end with ` [[CONTINUE]]` or ` [[DONE]]`. With k the
 * number of assistant messages with text and no tool call after the latest user message carrying the directive,
 * the answer continues while k + 1 < N (forever: always), else it is done. A loop driver sends "Continue." after
 * each iteration, so the directive is found in any user message, not only the last.
 *
 * Exact text: a user message carrying `[[say "<JSON string>"]]` is answered with exactly that string, JSON-decoded,
 * so a test can have the provider send what no client could (`"\u0000"`: a NUL in the model's answer).
 *
 * Images: a text answer to a user message with images (OpenAI `image_url` parts, Anthropic `image` blocks, Gemini
 * `inlineData`/`fileData` parts) ends with ` [saw N image(s)]`, so a test proves the images reached the model.
 */
import { z } from 'zod';
import { formatFromInstruction, structuredValue } from './structured.ts';

export { formatFromInstruction };

/** A request reduced to what decides the reply; each protocol module builds it from its own wire body. */
export interface SimulationInput {
  model: string;
  /** Characters of all prompt text (system, messages, tool calls and results); usage is derived from it. */
  promptChars: number;
  lastTurn: { kind: 'user'; text: string } | { kind: 'tool-result'; content: string };
  /** The text of the last message the user wrote (a tool result is not one). */
  userText: string;
  /** Model turns with tool calls since that message: the script's position. */
  toolRounds: number;
  tools: Array<{ name: string; parameters: unknown }>;
  toolChoice: 'auto' | 'none' | 'required' | { name: string };
  maxTokens: number | undefined;
  stop: string[];
  /** The request turned reasoning on, by its protocol's rule (see the header). */
  reasoning: boolean;
  /** The JSON the answer must be (see the header); absent: free text. */
  responseFormat?: { kind: 'json_object' } | { kind: 'json_schema'; schema: unknown };
  /** The user and assistant messages in order, for the agent-loop directive (tool results left out). */
  history: HistoryMessage[];
  /** Images in the last user message. */
  images: number;
  /** The request asked for token log probabilities (OpenAI `logprobs`). */
  logprobs?: boolean;
}

export type HistoryMessage = { role: 'user'; text: string } | { role: 'assistant'; text: string; toolCalls: number };

interface ReplyCommon {
  promptTokens: number;
  /** Every generated token: the reasoning's and the answer's. */
  completionTokens: number;
  /** The reasoning's tokens, before the answer (none when the request did not turn reasoning on). */
  reasoning: string[];
  finish: 'stop' | 'length' | 'tool_calls';
  /** The stop sequence that ended the text, when one did. */
  stopSequence: string | null;
}

export type ReplyPlan =
  | (ReplyCommon & { kind: 'text'; tokens: string[] })
  | (ReplyCommon & {
      kind: 'tool-call';
      name: string;
      /** The complete arguments; `argumentChunks` joined equal their JSON unless max_tokens cut them. */
      arguments: Record<string, unknown>;
      argumentChunks: string[];
      /** False when max_tokens cut the arguments short. */
      complete: boolean;
    });

const argumentChunkChars = 6;
const quotedUserChars = 40;
const quotedToolResultChars = 200;

/** Decides the reply: a tool call when tools are offered and usable, otherwise a sentence about the prompt. */
export function planReply(input: SimulationInput): ReplyPlan {
  const promptTokens = Math.max(1, Math.ceil(input.promptChars / 4));
  const reasoning = input.reasoning ? (reasoningText(input).match(/\s*\S+/g) ?? []) : [];
  const tool = chooseTool(input);
  if (tool !== undefined) {
    const toolArguments = tool.arguments ?? sampleArguments(tool.parameters);
    const allChunks = chunk(JSON.stringify(toolArguments), argumentChunkChars);
    const argumentChunks = allChunks.slice(0, input.maxTokens ?? allChunks.length);
    const complete = argumentChunks.length === allChunks.length;
    return {
      kind: 'tool-call',
      name: tool.name,
      arguments: toolArguments,
      argumentChunks,
      complete,
      promptTokens,
      completionTokens: reasoning.length + argumentChunks.length,
      reasoning,
      finish: complete ? 'tool_calls' : 'length',
      stopSequence: null,
    };
  }
  const { text, stopSequence } = applyStopSequences(replyText(input), input.stop);
  const allTokens = text.match(/\s*\S+/g) ?? [];
  const tokens = allTokens.slice(0, input.maxTokens ?? allTokens.length);
  return {
    kind: 'text',
    tokens,
    promptTokens,
    completionTokens: reasoning.length + tokens.length,
    reasoning,
    finish: tokens.length < allTokens.length ? 'length' : 'stop',
    stopSequence: tokens.length < allTokens.length ? null : stopSequence,
  };
}

/** The full reply text before stop sequences and max_tokens apply: JSON when asked for, else a sentence. */
export function replyText(input: SimulationInput): string {
  const format = input.responseFormat;
  if (format?.kind === 'json_schema') return JSON.stringify(structuredValue(format.schema, input.userText));
  if (format?.kind === 'json_object') return JSON.stringify({ reply: sentence(input) });
  const marker = loopMarker(input.history);
  return marker === undefined ? sentence(input) : `${sentence(input)} ${marker}`;
}

const sayPattern = /\[\[say\s+("(?:[^"\\]|\\.)*")\s*\]\]/s;

function sentence(input: SimulationInput): string {
  const say = input.lastTurn.kind === 'tool-result' ? null : sayPattern.exec(input.lastTurn.text);
  if (say) {
    try {
      const text = JSON.parse(say[1]!) as string;
      if (text.trim() !== '') return text;
    } catch {
      // Not a JSON string: answered as any other message.
    }
  }
  if (input.lastTurn.kind === 'tool-result') {
    return `Simulated reply from ${input.model} with tool result: ${input.lastTurn.content.slice(0, quotedToolResultChars)}`.trim();
  }
  const seen = input.images > 0 ? ` [saw ${input.images} image(s)]` : '';
  return `Simulated reply from ${input.model} to: ${input.lastTurn.text.slice(0, quotedUserChars)}`.trim() + seen;
}

const iterationsPattern = /\[\[iterations\s+(\d+|forever)\s*\]\]/i;

/** `[[CONTINUE]]` or `[[DONE]]` under an `[[iterations …]]` directive (see the header); undefined without one. */
export function loopMarker(history: HistoryMessage[]): '[[CONTINUE]]' | '[[DONE]]' | undefined {
  let directiveAt = -1;
  let limit: number | 'forever' = 'forever';
  history.forEach((message, index) => {
    const match = message.role === 'user' ? iterationsPattern.exec(message.text) : null;
    if (match === null) return;
    const wanted = match[1]!.toLowerCase() === 'forever' ? 'forever' : Number(match[1]);
    if (wanted !== 'forever' && wanted < 1) return;
    directiveAt = index;
    limit = wanted;
  });
  if (directiveAt < 0) return undefined;
  const answered = history
    .slice(directiveAt + 1)
    .filter((message) => message.role === 'assistant' && message.text.trim() !== '' && message.toolCalls === 0).length;
  return limit === 'forever' || answered + 1 < limit ? '[[CONTINUE]]' : '[[DONE]]';
}

/** What a reasoning model thinks before it answers: it names the model and quotes what it answers. */
export function reasoningText(input: SimulationInput): string {
  const quoted =
    input.lastTurn.kind === 'tool-result'
      ? input.lastTurn.content.slice(0, quotedUserChars)
      : input.lastTurn.text.slice(0, quotedUserChars);
  return `Simulated reasoning of ${input.model} about: ${quoted}`.trim();
}

interface ChosenTool {
  name: string;
  parameters: unknown;
  /** Scripted arguments; otherwise sampled from the schema. */
  arguments?: Record<string, unknown>;
}

const directivePattern = /\[\[call\s+([A-Za-z0-9_.-]+)\s*(\{.*?\})?\s*\]\]/gs;

/** The `[[call <tool> <json>]]` directives of a user message, in order (arguments that are not JSON: none). */
export function scriptOf(text: string): Array<{ name: string; arguments: Record<string, unknown> }> {
  return [...text.matchAll(directivePattern)].map((match) => {
    let parsed: unknown = {};
    try {
      parsed = match[2] ? JSON.parse(match[2]) : {};
    } catch {
      parsed = {};
    }
    return { name: match[1]!, arguments: z.record(z.string(), z.unknown()).safeParse(parsed).data ?? {} };
  });
}

function chooseTool(input: SimulationInput): ChosenTool | undefined {
  if (input.toolChoice === 'none' || input.tools.length === 0) return undefined;
  if (input.lastTurn.kind === 'tool-result' && scriptOf(input.userText).length === 0) return undefined;
  const script = scriptOf(input.userText);
  if (script.length > 0 && input.tools.length > 0) {
    const step = script[input.toolRounds];
    if (!step) return undefined;
    const offered = input.tools.find((tool) => tool.name === step.name);
    return { name: step.name, parameters: offered?.parameters, arguments: step.arguments };
  }
  if (input.tools.length === 0) return undefined;
  const choice = input.toolChoice;
  if (typeof choice === 'object') return input.tools.find((tool) => tool.name === choice.name) ?? input.tools[0];
  if (choice === 'required') return input.tools[0];
  const words = new Set(input.userText.toLowerCase().match(/[a-z0-9]+/g) ?? []);
  return input.tools.find((tool) => {
    const name = tool.name.toLowerCase();
    return words.has(name) || name.split(/[^a-z0-9]+/).some((part) => part.length >= 4 && words.has(part));
  });
}

function applyStopSequences(text: string, stop: string[]): { text: string; stopSequence: string | null } {
  let cut: { index: number; sequence: string } | undefined;
  for (const sequence of stop) {
    const index = sequence === '' ? -1 : text.indexOf(sequence);
    if (index >= 0 && (cut === undefined || index < cut.index)) cut = { index, sequence };
  }
  return cut === undefined
    ? { text, stopSequence: null }
    : { text: text.slice(0, cut.index), stopSequence: cut.sequence };
}

function chunk(text: string, size: number): string[] {
  const chunks: string[] = [];
  for (let start = 0; start < text.length; start += size) chunks.push(text.slice(start, start + size));
  return chunks;
}

const jsonSchemaShape = z.object({
  type: z.union([z.string(), z.array(z.string())]).optional(),
  enum: z.array(z.unknown()).optional(),
  const: z.unknown().optional(),
  anyOf: z.array(z.unknown()).optional(),
  oneOf: z.array(z.unknown()).optional(),
  properties: z.record(z.string(), z.unknown()).optional(),
  required: z.array(z.string()).optional(),
  items: z.unknown().optional(),
});

/** Arguments for a tool's JSON-schema parameters: the required properties (all, when none are marked). */
export function sampleArguments(parameters: unknown): Record<string, unknown> {
  const value = sampleValue(parameters, 'value');
  return z.record(z.string(), z.unknown()).safeParse(value).data ?? {};
}

function sampleValue(schema: unknown, name: string): unknown {
  const parsed = jsonSchemaShape.safeParse(schema);
  if (!parsed.success) return `sample ${name}`;
  const shape = parsed.data;
  if (shape.enum !== undefined && shape.enum.length > 0) return shape.enum[0];
  if (shape.const !== undefined) return shape.const;
  const alternative = shape.anyOf?.[0] ?? shape.oneOf?.[0];
  if (alternative !== undefined) return sampleValue(alternative, name);
  const type = Array.isArray(shape.type) ? (shape.type.find((item) => item !== 'null') ?? 'null') : shape.type;
  switch (type ?? (shape.properties !== undefined ? 'object' : 'string')) {
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array':
      return [sampleValue(shape.items, name)];
    case 'object': {
      const properties = shape.properties ?? {};
      const names = shape.required ?? Object.keys(properties);
      return Object.fromEntries(names.map((property) => [property, sampleValue(properties[property], property)]));
    }
    default:
      return `sample ${name}`;
  }
}
