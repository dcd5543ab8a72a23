import { AdminAuditEntry } from './admin-audit.entity.ts';
import { ApiKey } from './api-key.entity.ts';
import { ChatConversation } from './chat-conversation.entity.ts';
import { ChatLinkCode } from './chat-link-code.entity.ts';
import { ChatMessage } from './chat-message.entity.ts';
import { ChatSession } from './chat-session.entity.ts';
import { ChatTurn } from './chat-turn.entity.ts';
import { ConversationShare } from './conversation-share.entity.ts';
import { AgentModelChoice, CustomAgent } from './custom-agent.entity.ts';
import { CreditHold } from './credit-hold.entity.ts';
import { CreditLedgerEntry } from './credit-ledger-entry.entity.ts';
import { InboundWebhook, WebhookRun } from './inbound-webhook.entity.ts';
import { Memory } from './memory.entity.ts';
import { LoginToken } from './login-token.entity.ts';
import { MessengerEvent } from './messenger-event.entity.ts';
import { OAuthIdentity } from './oauth-identity.entity.ts';
import { OAuthLoginState } from './oauth-login-state.entity.ts';
import { MediaCallbackSecret, MediaJob } from './media-job.entity.ts';
import { ModelResponse } from './model-response.entity.ts';
import { ApiFile } from './api-file.entity.ts';
import { Batch, BatchLine } from './batch.entity.ts';
import { CapacityModel, CapacityWaiter } from './capacity-waiter.entity.ts';
import { PublishedSite } from './published-site.entity.ts';
import { ProviderBreaker } from './provider-breaker.entity.ts';
import { RateLimitBucket } from './rate-limit-bucket.entity.ts';
import { ScheduleTask } from './schedule-task.entity.ts';
import { SentMail } from './sent-mail.entity.ts';
import { StreamChunk } from './stream-chunk.entity.ts';
import { StripeEvent } from './stripe-event.entity.ts';
import { Team, TeamBroadcast, TeamBroadcastDelivery, TeamInvitation, TeamMember } from './team.entity.ts';
import { TableImport } from './table-import.entity.ts';
import { Upload } from './upload.entity.ts';
import { User } from './user.entity.ts';
import { WebSession } from './web-session.entity.ts';
import { WorkspaceWrite } from './workspace-write.entity.ts';

export {
  AdminAuditEntry,
  ApiFile,
  Batch,
  BatchLine,
  CapacityModel,
  CapacityWaiter,
  AgentModelChoice,
  ApiKey,
  ChatConversation,
  ChatLinkCode,
  ChatMessage,
  ChatSession,
  ChatTurn,
  ConversationShare,
  CreditHold,
  CreditLedgerEntry,
  CustomAgent,
  InboundWebhook,
  Memory,
  LoginToken,
  MediaCallbackSecret,
  MediaJob,
  MessengerEvent,
  ModelResponse,
  OAuthIdentity,
  OAuthLoginState,
  ProviderBreaker,
  PublishedSite,
  RateLimitBucket,
  ScheduleTask,
  SentMail,
  StreamChunk,
  StripeEvent,
  Team,
  TeamBroadcast,
  TeamBroadcastDelivery,
  TeamInvitation,
  TeamMember,
  TableImport,
  Upload,
  User,
  WebSession,
  WebhookRun,
  WorkspaceWrite,
};

export const entities = [
  User,
  ApiKey,
  ProviderBreaker,
  StreamChunk,
  CreditLedgerEntry,
  CreditHold,
  StripeEvent,
  RateLimitBucket,
  ChatConversation,
  ChatSession,
  ChatMessage,
  ChatTurn,
  ChatLinkCode,
  MessengerEvent,
  CustomAgent,
  AgentModelChoice,
  Memory,
  LoginToken,
  WebSession,
  OAuthIdentity,
  OAuthLoginState,
  SentMail,
  PublishedSite,
  Team,
  TeamMember,
  TeamInvitation,
  TeamBroadcast,
  TeamBroadcastDelivery,
  ScheduleTask,
  MediaCallbackSecret,
  MediaJob,
  Upload,
  TableImport,
  InboundWebhook,
  WebhookRun,
  WorkspaceWrite,
  ConversationShare,
  ModelResponse,
  ApiFile,
  Batch,
  BatchLine,
  CapacityModel,
  CapacityWaiter,
  AdminAuditEntry,
];
