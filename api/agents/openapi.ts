/**
 * The agent service's OpenAPI document: every route's contract, collected from the `contract.ts` beside each area's
 * routes (api/openapi/contract.ts). A route without a contract fails test/api/openapi.test.ts.
 */
import { z } from 'zod';
import type { RouteContract } from '../openapi/contract.ts';
import { healthContracts } from '../readiness.ts';
import type { ServiceDescription } from '../openapi/document.ts';
import { openApiContracts } from '../openapi/routes.ts';
import { metricsContract } from '../gateway/openapi.ts';
import { mediaFileContract } from '../gateway/routes/media/contract.ts';
import { a2aContracts } from './routes/a2a/contract.ts';
import { adminContracts } from './routes/admin/contract.ts';
import { agentCatalogueContracts } from './routes/agents/contract.ts';
import { authContracts } from './routes/auth/contract.ts';
import { automationContracts } from './routes/automation/contract.ts';
import { agentBillingContracts } from './routes/billing/contract.ts';
import { agentChatContracts } from './routes/chat/contract.ts';
import { dashboardContracts } from './routes/dashboard/contract.ts';
import { historyContracts } from './routes/history/contract.ts';
import { mediaDoorContracts } from './routes/media/contract.ts';
import { memoryContracts } from './routes/memory/contract.ts';
import { messengerContracts } from './routes/messengers/contract.ts';
import { ragContracts } from './routes/rag/contract.ts';
import { scheduleContracts } from './routes/schedule/contract.ts';
import { sharingContracts } from './routes/sharing/contract.ts';
import { siteContracts } from './routes/sites/contract.ts';
import { sqlContracts } from './routes/sql/contract.ts';
import { suggestContracts } from './routes/suggest/contract.ts';
import { teamContracts } from './routes/teams/contract.ts';
import { uploadContracts } from './routes/uploads/contract.ts';
import { visionContracts } from './routes/vision/contract.ts';
import { webhookContracts } from './routes/webhooks/contract.ts';

const healthContract = healthContracts('agent service', { service: z.literal('agents') });

export const agentServiceContracts: RouteContract[] = [
  ...authContracts,
  ...agentCatalogueContracts,
  ...memoryContracts,
  ...agentChatContracts,
  ...suggestContracts,
  ...historyContracts,
  ...sharingContracts,
  ...dashboardContracts,
  ...mediaDoorContracts,
  ...visionContracts,
  mediaFileContract,
  ...uploadContracts,
  ...ragContracts,
  ...sqlContracts,
  ...scheduleContracts,
  ...siteContracts,
  ...teamContracts,
  ...a2aContracts,
  ...webhookContracts,
  ...automationContracts,
  ...messengerContracts,
  ...agentBillingContracts,
  ...adminContracts,
  ...healthContract,
  metricsContract,
  ...openApiContracts,
];

export function agentsDescription(version: string): ServiceDescription {
  return {
    service: 'agents',
    title: 'Tessera agent service',
    version,
    description:
      'The agent service: logins, agents and their routed, durable chat and loops with tools and approvals, memory, ' +
      'history and sharing, files, RAG and SQL, scheduled tasks, published sites, teams, A2A, inbound webhooks, ' +
      'media doors and the dashboard, on the gateway’s users, keys and credits. Callers log in (the ' +
      '`tessera_session` cookie) or send a key (`Authorization: Bearer te_…`; `X-API-Key` on `/api/v1/*`, `/a2a*` ' +
      'and `/automation/*`). Errors share one envelope, `{"error": {"type", "message", "param"?, "retry_after"?}}`. ' +
      'The guide is README.md and docs/ in the Tessera repository; this document is generated from the routes’ own ' +
      'schemas.',
    contracts: agentServiceContracts,
    tags: [
      { name: 'Login and accounts', description: 'Magic links, Google, the session cookie, who the caller is' },
      { name: 'API keys', description: 'Keys of the caller' },
      { name: 'Agents', description: 'The built-in catalogue and custom agents' },
      { name: 'Chat', description: 'Routed streaming chat, agent loops, approvals' },
      { name: 'Memory', description: 'Long-term memories' },
      { name: 'History', description: 'Sessions, messages, search, usage' },
      { name: 'Sharing and export', description: 'Public read-only links and exports' },
      { name: 'Dashboard', description: 'Statistics' },
      { name: 'Media', description: 'Speech, transcription, images, vision' },
      { name: 'Files and RAG', description: 'Uploads, indexing and search' },
      { name: 'SQL', description: 'Read-only SQL on the caller’s tables, table imports' },
      { name: 'Scheduled tasks', description: 'Agents on a cron' },
      { name: 'Published sites', description: 'Static sites on subdomains' },
      { name: 'Teams', description: 'Members, invitations, broadcasts' },
      { name: 'Agent-to-agent (A2A)', description: 'The Agent Card and JSON-RPC' },
      { name: 'Inbound webhooks', description: 'Standard Webhooks, GitHub, Slack, automation tools' },
      { name: 'Messaging apps', description: 'Linking chats, sending to them' },
      { name: 'Billing', description: 'Plans and Stripe' },
      { name: 'Operations', description: 'Health and metrics' },
      {
        name: 'Operator console',
        description: 'Users, credits and keys, traces, provider health, failed workflows: the master key or an admin',
      },
      { name: 'Reference', description: 'This document and its reference page' },
    ],
  };
}
