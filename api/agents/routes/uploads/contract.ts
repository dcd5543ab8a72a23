/** Contracts of file uploads (api/openapi/contract.ts). */
import { z } from 'zod';
import { uploadKinds } from '../../../../activities/uploads/upload-store.ts';
import { bytes, isoDate, json, route } from '../../../openapi/contract.ts';
import { ragIndexSchema } from '../rag/contract.ts';
import { base64UploadSchema, downloadQuerySchema, fileNameSchema, listQuerySchema } from './schema.ts';

const tags = ['Files and RAG'];

const file = z
  .strictObject({
    id: z.string(),
    object: z.literal('file'),
    file_name: z.string(),
    kind: z.enum(uploadKinds),
    content_type: z.string(),
    bytes: z.number().int(),
    sha256: z.string(),
    created_at: isoDate,
    download_url: z.string(),
    index: ragIndexSchema.optional().meta({ description: 'The file’s latest RAG index, when it has one' }),
  })
  .meta({ id: 'File' });

const notFound = { 404: 'No such file of the caller’s' } as const;

export const uploadContracts = [
  route({
    method: 'POST',
    path: '/upload',
    summary: 'Upload a file',
    description:
      'Multipart with one part named `file` (and an optional `file_name`), or JSON with the bytes in base64.',
    tags,
    access: 'caller',
    request: {
      content: {
        'multipart/form-data': {
          schema: z.object({ file: z.file(), file_name: fileNameSchema.optional() }),
        },
        'application/json': { schema: base64UploadSchema },
      },
    },
    responses: { 201: { ...json(file, 'The file'), headers: z.object({ location: z.string() }) } },
    errors: { 413: 'Larger than the file limit, or past the quota', 415: 'A type the platform does not read' },
  }),
  route({
    method: 'GET',
    path: '/upload',
    summary: 'The caller’s files, newest first (`limit`: the newest n; 0 for the quota alone), and quota',
    tags,
    access: 'caller',
    request: { query: listQuerySchema },
    responses: {
      200: json(
        z.strictObject({
          files: z.array(file),
          used_bytes: z.number().int(),
          quota_bytes: z.number().int(),
          max_file_bytes: z.number().int(),
        }),
        'The files',
      ),
    },
  }),
  route({
    method: 'GET',
    path: '/upload/:file_id',
    summary: 'A file’s metadata, or its bytes (`download=1`, or an Accept naming its type)',
    tags,
    access: 'caller',
    request: { query: downloadQuerySchema },
    responses: {
      200: {
        ...bytes(
          ['*/*'],
          'The metadata (JSON), or the bytes as an attachment',
          z.object({ etag: z.string().optional() }),
        ),
        content: { 'application/json': { schema: file }, '*/*': {} },
      },
    },
    errors: notFound,
  }),
  route({
    method: 'DELETE',
    path: '/upload/:file_id',
    summary: 'Delete a file and everything indexed from it',
    tags,
    access: 'caller',
    responses: {
      200: json(z.strictObject({ id: z.string(), object: z.literal('file'), deleted: z.literal(true) }), 'Deleted'),
    },
    errors: notFound,
  }),
];
