/** Contracts of the Files API, OpenAI's `/v1/files` (api/openapi/contract.ts). */
import { z } from 'zod';
import { bytes, json, route } from '../../../openapi/contract.ts';
import { fileListSchema, fileObjectSchema, listQuerySchema } from './schema.ts';

export const fileContracts = [
  route({
    method: 'POST',
    path: '/v1/files',
    summary: 'Upload a file (OpenAI Files API)',
    description:
      'Multipart: `file` (JSONL, one request a line: `{custom_id, method: "POST", url, body}`) and `purpose: batch`. Each line is checked; the first at fault is named.',
    tags: ['Files'],
    access: 'caller',
    request: { content: { 'multipart/form-data': {} } },
    responses: { 200: json(fileObjectSchema, 'The file') },
    errors: { 413: 'The file is larger than FILES_MAX_BYTES' },
  }),
  route({
    method: 'GET',
    path: '/v1/files',
    summary: 'The caller’s files',
    tags: ['Files'],
    access: 'caller',
    request: { query: listQuerySchema },
    responses: { 200: json(fileListSchema, 'Newest first unless `order=asc`') },
  }),
  route({
    method: 'GET',
    path: '/v1/files/:id',
    summary: 'A file',
    tags: ['Files'],
    access: 'caller',
    responses: { 200: json(fileObjectSchema, 'The file') },
    errors: { 404: 'No such file of the caller’s' },
  }),
  route({
    method: 'GET',
    path: '/v1/files/:id/content',
    summary: 'A file’s content',
    tags: ['Files'],
    access: 'caller',
    responses: { 200: bytes(['application/jsonl'], 'The bytes as uploaded') },
    errors: { 404: 'No such file of the caller’s' },
  }),
  route({
    method: 'DELETE',
    path: '/v1/files/:id',
    summary: 'Delete a file',
    tags: ['Files'],
    access: 'caller',
    responses: {
      200: json(z.strictObject({ id: z.string(), object: z.literal('file'), deleted: z.literal(true) }), 'Deleted'),
    },
    errors: { 404: 'No such file of the caller’s' },
  }),
];
