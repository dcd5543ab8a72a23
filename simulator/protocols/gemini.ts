/** The Gemini generateContent protocol as the simulator speaks it (`POST /v1beta/models/{model}:…`). */
import { z } from 'zod';
import type { HistoryMessage, ReplyPlan, SimulationInput } from '../reply.ts';
import type { EventFrame } from '../transport.ts';
import { headerValue, simulatedId, type IncomingCall, type ParsedCall, type ProtocolHandler } from './protocol.ts';

const partSchema = z.strictObject({
  text: z.string().optional(),
  thought: z.boolean().optional(),
  thoughtSignature: z.string().optional(),
  functionCall: z
    .strictObject({ name: z.string().min(1), args: z.record(z.string(), z.unknown()).optional() })
    .optional(),
  functionResponse: z.strictObject({ name: z.string().min(1), response: z.record(z.string(), z.unknown()) }).optional(),
  inlineData: z
    .strictObject({ mimeType: z.string().min(1), data: z.string().regex(/^[A-Za-z0-9+/=_-]+$/, 'data must be base64') })
    .optional(),
  fileData: z.strictObject({ mimeType: z.string().optional(), fileUri: z.string().min(1) }).optional(),
});

/** Strict like Google's API, which rejects a body with a field it does not know ("Unknown name"). */
const requestSchema = z.strictObject({
  contents: z
    .array(z.strictObject({ role: z.enum(['user', 'model']).optional(), parts: z.array(partSchema).min(1) }))
    .min(1),
  systemInstruction: z.object({ parts: z.array(z.object({ text: z.string() })) }).optional(),
  tools: z
    .array(
      z.object({
        functionDeclarations: z
          .array(
            z.strictObject({
              name: z.string().min(1),
              description: z.string().optional(),
              parameters: z.unknown().optional(),
            }),
          )
          .optional(),
      }),
    )
    .optional(),
  toolConfig: z
    .object({
      functionCallingConfig: z
        .object({
          mode: z.enum(['MODE_UNSPECIFIED', 'AUTO', 'ANY', 'NONE', 'VALIDATED']).optional(),
          allowedFunctionNames: z.array(z.string()).optional(),
        })
        .optional(),
    })
    .optional(),
  generationConfig: z
    .strictObject({
      maxOutputTokens: z.number().int().positive().optional(),
      temperature: z.number().min(0).max(2).optional(),
      topP: z.number().min(0).max(1).optional(),
      topK: z.number().int().positive().optional(),
      stopSequences: z.array(z.string()).max(5).optional(),
      seed: z.number().int().optional(),
      presencePenalty: z.number().optional(),
      frequencyPenalty: z.number().optional(),
      candidateCount: z.number().int().positive().optional(),
      responseMimeType: z.string().optional(),
      responseSchema: z.record(z.string(), z.unknown()).optional(),
      responseJsonSchema: z.record(z.string(), z.unknown()).optional(),
      thinkingConfig: z
        .strictObject({
          includeThoughts: z.boolean().optional(),
          // -1 lets the model decide; 0 turns thinking off where the model allows it.
          thinkingBudget: z.number().int().min(-1).optional(),
          thinkingLevel: z.enum(['minimal', 'low', 'medium', 'high']).optional(),
        })
        .optional(),
    })
    .optional(),
  safetySettings: z.array(z.unknown()).optional(),
});

type GenerateContentRequest = z.infer<typeof requestSchema>;
type Part = z.infer<typeof partSchema>;

const statusNames: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** Speaks the Gemini API's generateContent and streamGenerateContent methods. */
export const geminiProtocol: ProtocolHandler = {
  protocol: 'gemini',
  modelOf: (call) => call.path.model ?? '',
  authenticationError(call) {
    const key = headerValue(call.headers, 'x-goog-api-key') ?? call.searchParams.get('key') ?? '';
    return key.trim() === ''
      ? "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
      : undefined;
  },
  parse: parseGenerateContentRequest,
  errorBody: (status, message) => ({
    error: {
      code: status,
      message,
      status: statusNames[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION'),
    },
  }),
  renderBody,
  renderEvents: renderStream,
};

function parseGenerateContentRequest(call: IncomingCall): ParsedCall {
  const parsed = requestSchema.safeParse(call.body);
  if (!parsed.success) {
    return { ok: false, status: 400, message: `Invalid JSON payload received. ${z.prettifyError(parsed.error)}` };
  }
  const stream = call.path.stream === true ? (call.searchParams.get('alt') === 'sse' ? 'sse' : 'json-array') : false;
  return { ok: true, input: toSimulationInput(call.path.model ?? '', parsed.data), stream, includeUsage: true };
}

function partText(part: Part): string {
  if (part.text !== undefined) return part.text;
  if (part.functionCall !== undefined) return JSON.stringify(part.functionCall.args ?? {});
  if (part.functionResponse !== undefined) return resultText(part.functionResponse.response);
  return '';
}

/** The adapter wraps a tool's result as `{content}`; quote the content itself when it is text. */
function resultText(response: Record<string, unknown>): string {
  return typeof response.content === 'string' ? response.content : JSON.stringify(response.content ?? response);
}

function toSimulationInput(model: string, request: GenerateContentRequest): SimulationInput {
  const parts = request.contents.flatMap((content) => content.parts);
  const system = (request.systemInstruction?.parts ?? []).map((part) => part.text).join('');
  const lastParts = request.contents.at(-1)?.parts ?? [];
  const responses = lastParts.flatMap((part) => (part.functionResponse === undefined ? [] : [part.functionResponse]));
  const lastUserText = request.contents
    .filter((content) => content.role !== 'model')
    .flatMap((content) => content.parts)
    .findLast((part) => part.text !== undefined);
  const lastUserIndex = request.contents.findLastIndex(
    (content) => content.role !== 'model' && content.parts.some((part) => part.text !== undefined),
  );
  const toolRounds = request.contents
    .slice(lastUserIndex + 1)
    .filter(
      (content) => content.role === 'model' && content.parts.some((part) => part.functionCall !== undefined),
    ).length;
  return {
    model,
    promptChars: system.length + parts.reduce((sum, part) => sum + partText(part).length, 0),
    lastTurn:
      responses.length > 0
        ? { kind: 'tool-result', content: responses.map((response) => resultText(response.response)).join('\n') }
        : { kind: 'user', text: lastUserText?.text ?? '' },
    userText: lastUserText?.text ?? '',
    toolRounds,
    tools: (request.tools ?? [])
      .flatMap((tool) => tool.functionDeclarations ?? [])
      .map((declaration) => ({ name: declaration.name, parameters: declaration.parameters })),
    toolChoice: toolChoiceOf(request.toolConfig?.functionCallingConfig),
    maxTokens: request.generationConfig?.maxOutputTokens,
    stop: request.generationConfig?.stopSequences ?? [],
    // Gemini 2.5 thinks either way, but returns its thought summaries only when asked.
    reasoning: request.generationConfig?.thinkingConfig?.includeThoughts === true,
    responseFormat: responseFormatOf(request.generationConfig),
    history: request.contents.flatMap((content): HistoryMessage[] => {
      const text = content.parts
        .filter((part) => part.text !== undefined && part.thought !== true)
        .map((part) => part.text)
        .join('');
      if (content.role !== 'model') {
        return content.parts.some((part) => part.text !== undefined) ? [{ role: 'user', text }] : [];
      }
      return [{ role: 'assistant', text, toolCalls: content.parts.filter((part) => part.functionCall).length }];
    }),
    images:
      lastUserIndex < 0
        ? 0
        : request.contents[lastUserIndex]!.parts.filter((part) => part.inlineData ?? part.fileData).length,
  };
}

/** JSON is asked for by its MIME type; the schema comes as an OpenAPI-style `responseSchema` or a JSON Schema. */
function responseFormatOf(config: GenerateContentRequest['generationConfig']): SimulationInput['responseFormat'] {
  if (config?.responseMimeType !== 'application/json') return undefined;
  const schema = config.responseJsonSchema ?? config.responseSchema;
  return schema === undefined ? { kind: 'json_object' } : { kind: 'json_schema', schema };
}

function toolChoiceOf(
  config: NonNullable<GenerateContentRequest['toolConfig']>['functionCallingConfig'],
): SimulationInput['toolChoice'] {
  if (config?.mode === 'NONE') return 'none';
  if (config?.mode !== 'ANY') return 'auto';
  const allowed = config.allowedFunctionNames?.[0];
  return allowed === undefined ? 'required' : { name: allowed };
}

const finishReasons = { stop: 'STOP', length: 'MAX_TOKENS', tool_calls: 'STOP' } as const;

/** One GenerateContentResponse: the whole answer, or a streamed piece of it, with the token counts so far. */
function responseOf(
  plan: ReplyPlan,
  input: SimulationInput,
  includeUsage: boolean,
  piece: { responseId: string; answerTokens: number; thoughtTokens: number; final: boolean; parts: unknown[] },
): unknown {
  const { answerTokens, thoughtTokens, final, parts } = piece;
  const usage = {
    promptTokenCount: plan.promptTokens,
    ...(final ? { candidatesTokenCount: answerTokens } : {}),
    // Gemini counts thinking apart from the candidates; both are billed as output.
    ...(thoughtTokens > 0 ? { thoughtsTokenCount: thoughtTokens } : {}),
    totalTokenCount: plan.promptTokens + answerTokens + thoughtTokens,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: plan.promptTokens }],
  };
  return {
    candidates: [
      { content: { parts, role: 'model' }, ...(final ? { finishReason: finishReasons[plan.finish] } : {}), index: 0 },
    ],
    ...(includeUsage ? { usageMetadata: usage } : {}),
    modelVersion: input.model,
    responseId: piece.responseId,
  };
}

function answerParts(plan: ReplyPlan): unknown[] {
  if (plan.kind === 'text') return [{ text: plan.tokens.join('') }];
  // Gemini drops a function call that max_tokens cut short rather than sending broken arguments.
  return plan.complete ? [{ functionCall: { name: plan.name, args: plan.arguments } }] : [{ text: '' }];
}

/** The thought summary that precedes the answer, when the request asked for thoughts. */
function thoughtParts(plan: ReplyPlan): unknown[] {
  return plan.reasoning.length > 0 ? [{ text: plan.reasoning.join(''), thought: true }] : [];
}

function renderBody(plan: ReplyPlan, input: SimulationInput, options: { includeUsage: boolean }): unknown {
  return responseOf(plan, input, options.includeUsage, {
    responseId: simulatedId(22),
    answerTokens: plan.completionTokens - plan.reasoning.length,
    thoughtTokens: plan.reasoning.length,
    final: true,
    parts: [...thoughtParts(plan), ...answerParts(plan)],
  });
}

/**
 * Thoughts, then text, arrive a word per event; a function call arrives whole, as Gemini never splits one.
 */
function renderStream(plan: ReplyPlan, input: SimulationInput, options: { includeUsage: boolean }): EventFrame[] {
  const responseId = simulatedId(22);
  const thoughtTokens = plan.reasoning.length;
  const answerTokens = plan.completionTokens - thoughtTokens;
  const thoughts = plan.reasoning.map((token, index) => {
    const piece = { responseId, answerTokens: 0, thoughtTokens: index + 1, final: false };
    const data = responseOf(plan, input, options.includeUsage, { ...piece, parts: [{ text: token, thought: true }] });
    return { data, tokens: 1 };
  });
  if (plan.kind === 'tool-call' || plan.tokens.length === 0) {
    const piece = { responseId, answerTokens, thoughtTokens, final: true, parts: answerParts(plan) };
    return [...thoughts, { data: responseOf(plan, input, options.includeUsage, piece), tokens: answerTokens }];
  }
  const answer = plan.tokens.map((token, index) => {
    const piece = {
      responseId,
      answerTokens: index + 1,
      thoughtTokens,
      final: index === plan.tokens.length - 1,
      parts: [{ text: token }],
    };
    return { data: responseOf(plan, input, options.includeUsage, piece), tokens: 1 };
  });
  return [...thoughts, ...answer];
}
