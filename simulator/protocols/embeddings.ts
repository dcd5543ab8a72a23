/**
 * The embedding methods as the simulator speaks them: OpenAI's `POST /v1/embeddings` and Gemini's
 * `models/{model}:embedContent` and `:batchEmbedContents`, each validated like the real API and answered with the
 * hashed bag of words of simulator/embeddings.ts. Authentication and error bodies are those of the protocol's chat
 * handler.
 */
import { z } from 'zod';
import { base64Floats, simulatedDimensions, simulatedEmbedding, simulatedTokens } from '../embeddings.ts';
import type { Protocol } from '../faults.ts';
import { geminiProtocol } from './gemini.ts';
import { openAIProtocol } from './openai.ts';
import { bodyModel, type IncomingCall, type ProtocolHandler } from './protocol.ts';

export type EmbeddingAnswer = { ok: true; body: unknown } | { ok: false; status: number; message: string };

export interface EmbeddingHandler {
  readonly protocol: Protocol;
  /** The chat handler of the same protocol: credentials and error bodies. */
  readonly chat: ProtocolHandler;
  modelOf(call: IncomingCall): string;
  answer(call: IncomingCall): EmbeddingAnswer;
}

const openAIRequestSchema = z.object({
  model: z.string().min(1),
  input: z.union([
    z.string().min(1, "'$.input' is invalid: an input must not be empty"),
    z.array(z.string().min(1, "'$.input' is invalid: an input must not be empty")).min(1).max(2048),
    z.array(z.number().int().nonnegative()).min(1),
    z.array(z.array(z.number().int().nonnegative()).min(1)).min(1).max(2048),
  ]),
  encoding_format: z.enum(['float', 'base64']).optional(),
  dimensions: z.number().int().positive().optional(),
  user: z.string().optional(),
});

/** OpenAI's embeddings (`POST /v1/embeddings`), as OpenAI-compatible servers answer it. */
export const openAIEmbeddings: EmbeddingHandler = {
  protocol: 'openai',
  chat: openAIProtocol,
  modelOf: (call) => bodyModel(call.body),
  answer(call) {
    const parsed = openAIRequestSchema.safeParse(call.body);
    if (!parsed.success) {
      return { ok: false, status: 400, message: `Invalid request: ${z.prettifyError(parsed.error)}` };
    }
    const request = parsed.data;
    const full = simulatedDimensions(request.model);
    // Only the text-embedding-3 generation takes `dimensions`, and never more than its own length.
    if (request.dimensions !== undefined && (!request.model.includes('embedding-3') || request.dimensions > full)) {
      return {
        ok: false,
        status: 400,
        message: request.model.includes('embedding-3')
          ? `Invalid value for 'dimensions': at most ${full}.`
          : 'This model does not support specifying dimensions.',
      };
    }
    const texts = inputTexts(request.input);
    const data = texts.map((text, index) => {
      const vector = simulatedEmbedding(text, full, request.dimensions ?? full);
      return {
        object: 'embedding',
        index,
        embedding: request.encoding_format === 'base64' ? base64Floats(vector) : vector,
      };
    });
    const tokens = texts.reduce((sum, text) => sum + simulatedTokens(text), 0);
    return {
      ok: true,
      body: { object: 'list', data, model: request.model, usage: { prompt_tokens: tokens, total_tokens: tokens } },
    };
  },
};

/** Token ids stand for words of their own (`t<id>`), so token inputs embed deterministically too. */
function inputTexts(input: z.infer<typeof openAIRequestSchema>['input']): string[] {
  if (typeof input === 'string') return [input];
  if (input.every((item) => typeof item === 'string')) return input;
  if (input.every((item) => typeof item === 'number')) return [input.map((token) => `t${token}`).join(' ')];
  return (input as number[][]).map((tokens) => tokens.map((token) => `t${token}`).join(' '));
}

const taskTypes = [
  'TASK_TYPE_UNSPECIFIED',
  'RETRIEVAL_QUERY',
  'RETRIEVAL_DOCUMENT',
  'SEMANTIC_SIMILARITY',
  'CLASSIFICATION',
  'CLUSTERING',
  'QUESTION_ANSWERING',
  'FACT_VERIFICATION',
  'CODE_RETRIEVAL_QUERY',
] as const;

/** Strict like Google's API: an unknown field is an error. */
const geminiEmbedRequestSchema = z.strictObject({
  model: z.string().optional(),
  content: z.strictObject({ parts: z.array(z.strictObject({ text: z.string() })).min(1), role: z.string().optional() }),
  taskType: z.enum(taskTypes).optional(),
  title: z.string().optional(),
  outputDimensionality: z.number().int().positive().optional(),
});

const geminiBatchSchema = z.strictObject({ requests: z.array(geminiEmbedRequestSchema).min(1).max(100) });
/** `embedContent`'s body is one request, read as a batch of one. */
const geminiSingleSchema = geminiEmbedRequestSchema.transform((request) => ({ requests: [request] }));

/** Gemini's `embedContent` (one text) and `batchEmbedContents` (up to 100), on `v1beta/models/{model}`. */
export const geminiEmbeddings: EmbeddingHandler = {
  protocol: 'gemini',
  chat: geminiProtocol,
  modelOf: (call) => call.path.model ?? '',
  answer(call) {
    const model = call.path.model ?? '';
    const batch = call.path.method === 'batchEmbedContents';
    const parsed = (batch ? geminiBatchSchema : geminiSingleSchema).safeParse(call.body);
    if (!parsed.success) {
      return { ok: false, status: 400, message: `Invalid JSON payload received. ${z.prettifyError(parsed.error)}` };
    }
    const { requests } = parsed.data;
    const full = simulatedDimensions(model);
    for (const [index, request] of requests.entries()) {
      // Each request of a batch names its model, and it must be the one in the path.
      if (batch && request.model !== `models/${model}`) {
        return {
          ok: false,
          status: 400,
          message: `* BatchEmbedContentsRequest.requests[${index}].model: unexpected model name format`,
        };
      }
      if (request.outputDimensionality !== undefined && request.outputDimensionality > full) {
        return { ok: false, status: 400, message: `outputDimensionality must be at most ${full}` };
      }
    }
    // Gemini leaves a shortened vector unnormalised (only the full length is normalised).
    const embeddings = requests.map((request) => ({
      values: simulatedEmbedding(
        request.content.parts.map((part) => part.text).join(' '),
        full,
        request.outputDimensionality ?? full,
        false,
      ),
    }));
    return { ok: true, body: batch ? { embeddings } : { embedding: embeddings[0] } };
  },
};
