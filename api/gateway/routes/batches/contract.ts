/** Contracts of the Batch API, OpenAI's `/v1/batches` (api/openapi/contract.ts). */
import { json, route } from '../../../openapi/contract.ts';
import { batchListSchema, batchObjectSchema, createBatchSchema, listQuerySchema } from './schema.ts';

export const batchContracts = [
  route({
    method: 'POST',
    path: '/v1/batches',
    summary: 'Create a batch (OpenAI Batch API)',
    description:
      'Runs every request of an uploaded input file (`purpose: batch`) on the endpoint named, each line through the same router, failover and ledger as a synchronous request, charged at the plan’s batch rate. Poll it, then read `output_file_id` and `error_file_id` through `/v1/files/{id}/content`.',
    tags: ['Batches'],
    access: 'caller',
    request: { body: createBatchSchema },
    responses: { 200: json(batchObjectSchema, 'The batch, `validating`') },
    errors: { 404: 'No such input file of the caller’s' },
  }),
  route({
    method: 'GET',
    path: '/v1/batches',
    summary: 'The caller’s batches',
    tags: ['Batches'],
    access: 'caller',
    request: { query: listQuerySchema },
    responses: { 200: json(batchListSchema, 'Newest first') },
  }),
  route({
    method: 'GET',
    path: '/v1/batches/:id',
    summary: 'A batch',
    tags: ['Batches'],
    access: 'caller',
    responses: { 200: json(batchObjectSchema, 'The batch, its status and request counts') },
    errors: { 404: 'No such batch of the caller’s' },
  }),
  route({
    method: 'POST',
    path: '/v1/batches/:id/cancel',
    summary: 'Cancel a batch',
    description:
      'No line is started after it; lines in flight finish and stay in the output. The batch is `cancelling`, then `cancelled` with its files written (the lines not run in the error file, `batch_cancelled`).',
    tags: ['Batches'],
    access: 'caller',
    responses: { 200: json(batchObjectSchema, 'The batch, `cancelling` (or as it was, once it ended)') },
    errors: { 404: 'No such batch of the caller’s' },
  }),
];
