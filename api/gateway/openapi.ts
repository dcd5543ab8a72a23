/**
 * The gateway's OpenAPI document: every route's contract, collected from the `contract.ts` beside each area's
 * routes (api/openapi/contract.ts). A route without a contract fails test/api/openapi.test.ts.
 */
import { bytes, route, type RouteContract } from '../openapi/contract.ts';
import type { ServiceDescription } from '../openapi/document.ts';
import { openApiContracts } from '../openapi/routes.ts';
import { accountContracts } from './routes/account/contract.ts';
import { apiKeyContracts } from './routes/apikeys/contract.ts';
import { billingContracts } from './routes/billing/contract.ts';
import { chatContracts } from './routes/chat/contract.ts';
import { completionContracts } from './routes/completions/contract.ts';
import { messageContracts } from './routes/messages/contract.ts';
import { responseContracts } from './routes/responses/contract.ts';
import { fileContracts } from './routes/files/contract.ts';
import { batchContracts } from './routes/batches/contract.ts';
import { embeddingContracts } from './routes/embeddings/contract.ts';
import { mediaContracts } from './routes/media/contract.ts';
import { modelContracts } from './routes/models/contract.ts';
import { providerContracts } from './routes/providers/contract.ts';
import { messengerWebhookContracts } from './routes/webhooks/contract.ts';

/** `GET /metrics` (both services): Prometheus' text format. */
export const metricsContract = route({
  method: 'GET',
  path: '/metrics',
  summary: 'Prometheus metrics',
  tags: ['Operations'],
  access: 'public',
  responses: { 200: bytes(['text/plain'], 'The Prometheus text exposition format') },
});

export const gatewayContracts: RouteContract[] = [
  ...modelContracts,
  ...providerContracts,
  ...completionContracts,
  ...messageContracts,
  ...responseContracts,
  ...fileContracts,
  ...batchContracts,
  ...embeddingContracts,
  ...chatContracts,
  ...apiKeyContracts,
  ...accountContracts,
  ...billingContracts,
  ...mediaContracts,
  ...messengerWebhookContracts,
  metricsContract,
  ...openApiContracts,
];

export function gatewayDescription(version: string): ServiceDescription {
  return {
    service: 'gateway',
    title: 'Tessera gateway',
    version,
    description:
      'The OpenAI-compatible gateway: completions and embeddings routed across providers with failover, session ' +
      'chat with built-in tools, media engines, keys, accounts, plans and billing. Errors share one envelope, ' +
      '`{"error": {"type", "message", "param"?, "retry_after"?, "required_plan"?}}`. The guide is README.md and docs/ ' +
      'in the Tessera repository; this document is generated from the routes’ own schemas.',
    contracts: gatewayContracts,
    tags: [
      { name: 'Completions', description: 'OpenAI-compatible chat completions and their traces' },
      { name: 'Embeddings', description: 'OpenAI-compatible embeddings' },
      { name: 'Files', description: 'OpenAI’s Files API: JSONL files of requests for batches' },
      { name: 'Models', description: 'Models, prices and providers' },
      { name: 'Session chat', description: 'Conversations kept by the platform, with built-in tools' },
      { name: 'Messaging apps', description: 'LINE and Telegram' },
      { name: 'Media', description: 'Speech, images, video, music, transcription and their files' },
      { name: 'API keys', description: 'Keys of the caller' },
      { name: 'Account', description: 'Accounts, plans, credits and usage' },
      { name: 'Billing', description: 'Stripe checkout, portal and coupons' },
      { name: 'Operations', description: 'Health and metrics' },
      { name: 'Reference', description: 'This document and its reference page' },
    ],
  };
}
