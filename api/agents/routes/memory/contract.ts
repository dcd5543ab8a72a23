/** Contracts of the caller's memory (api/openapi/contract.ts). */
import { z } from 'zod';
import { isoDate, json, route } from '../../../openapi/contract.ts';
import { addMemorySchema, listMemoriesQuery, searchMemoriesQuery } from './schema.ts';

const tags = ['Memory'];

const memory = z.strictObject({
  id: z.string(),
  content: z.string(),
  importance: z.number(),
  source: z.string().meta({ description: 'Who saved it: the user, or an agent' }),
  created_at: isoDate,
});

export const memoryContracts = [
  route({
    method: 'GET',
    path: '/memory/list',
    summary: 'The caller’s memories, most important first',
    tags,
    access: 'caller',
    request: { query: listMemoriesQuery },
    responses: { 200: json(z.strictObject({ memories: z.array(memory) }), 'The memories') },
  }),
  route({
    method: 'GET',
    path: '/memory/search',
    summary: 'Search the caller’s memories by keywords',
    tags,
    access: 'caller',
    request: { query: searchMemoriesQuery },
    responses: {
      200: json(
        z.strictObject({ query: z.string(), memories: z.array(memory.extend({ rank: z.number() })) }),
        'The matches, best first',
      ),
    },
  }),
  route({
    method: 'POST',
    path: '/memory/add',
    summary: 'Add a memory',
    description: 'The same content again updates the importance of the memory already there (200).',
    tags,
    access: 'caller',
    request: { body: addMemorySchema },
    responses: { 201: json(memory, 'Added'), 200: json(memory, 'Already there: its importance updated') },
  }),
  route({
    method: 'DELETE',
    path: '/memory/:id',
    summary: 'Delete a memory',
    tags,
    access: 'caller',
    responses: { 200: json(z.strictObject({ id: z.string(), deleted: z.literal(true) }), 'Deleted') },
    errors: { 404: 'No such memory of the caller’s' },
  }),
];
