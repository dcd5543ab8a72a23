/** Contracts of the RAG index and search (api/openapi/contract.ts). */
import { z } from 'zod';
import { isoDate, json, route } from '../../../openapi/contract.ts';
import { indexBodySchema, searchQuerySchema } from './schema.ts';

const tags = ['Files and RAG'];

/** A RAG index as the API shows it (api/services/rag/service.ts `presentIndex`). */
export const ragIndexSchema = z
  .strictObject({
    id: z.string(),
    object: z.literal('rag.index'),
    status: z.enum(['queued', 'extracting', 'embedding', 'done', 'failed']),
    file_id: z.string().nullable(),
    title: z.string(),
    model: z.string(),
    progress: z.strictObject({ chunks_done: z.number().int(), chunks_total: z.number().int().nullable() }),
    error: z.string().nullable(),
    workflow_id: z.string(),
    created_at: isoDate,
    finished_at: isoDate.nullable(),
  })
  .meta({ id: 'RagIndex' });

const location = z.union([
  z.strictObject({ kind: z.literal('page'), page: z.number().int() }),
  z.strictObject({
    kind: z.literal('rows'),
    rows: z.tuple([z.number().int(), z.number().int()]),
    sheet: z.string().optional(),
  }),
  z.strictObject({ kind: z.literal('image') }),
  z.strictObject({ kind: z.literal('text') }),
]);

export const ragContracts = [
  route({
    method: 'POST',
    path: '/rag/index',
    summary: 'Index an uploaded file or a text',
    description: 'A durable workflow builds the index; follow it at `GET /rag/index/{index_id}`.',
    tags,
    access: 'caller',
    request: { body: indexBodySchema },
    responses: { 202: { ...json(ragIndexSchema, 'The index, queued'), headers: z.object({ location: z.string() }) } },
    errors: { 404: 'No such file of the caller’s', 415: 'A file kind the index does not read' },
  }),
  route({
    method: 'GET',
    path: '/rag/index',
    summary: 'The caller’s indexes',
    tags,
    access: 'caller',
    responses: { 200: json(z.strictObject({ indexes: z.array(ragIndexSchema) }), 'The indexes') },
  }),
  route({
    method: 'GET',
    path: '/rag/index/:index_id',
    summary: 'An index’s status and progress',
    tags,
    access: 'caller',
    responses: { 200: json(ragIndexSchema, 'The index') },
    errors: { 404: 'No such index of the caller’s' },
  }),
  route({
    method: 'GET',
    path: '/rag/search',
    summary: 'The caller’s chunks nearest to a query',
    tags,
    access: 'caller',
    request: { query: searchQuerySchema },
    responses: {
      200: json(
        z.strictObject({
          query: z.string(),
          results: z.array(
            z.strictObject({
              text: z.string(),
              score: z.number(),
              file_id: z.string().nullable(),
              title: z.string(),
              index_id: z.string(),
              location,
            }),
          ),
        }),
        'The nearest chunks, best first',
      ),
    },
    errors: {
      402: 'Not enough credits for the query’s embedding',
      404: '`file_id` names no file of the caller’s',
      502: 'The embedding failed',
    },
  }),
];
