/** createActivities(deps): every activity the worker registers, built from injected dependencies. */
import { createBatchLineActivities, type BatchLineDependencies } from './batches/batch-lines.ts';
import { createCapacityActivities, type CapacityQueue } from './capacity/capacity-queue.ts';
import { createChatActivities, type ChatActivityDependencies } from './chat-activities.ts';
import { createCompletionActivities } from './completion-activities.ts';
import { createEmbeddingActivities } from './embeddings/embedding-activities.ts';
import type { EmbeddingCalls } from './embeddings/embedding-calls.ts';
import type { EmbeddingService } from './embeddings/embedding-service.ts';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { AccountPlans } from './credits/accounts.ts';
import type { CreditLedger } from './credits/credit-ledger.ts';
import { renewDueCycles } from './credits/renewals.ts';
import { createAbandonedHoldActivities, type AbandonedHoldDependencies } from './credits/abandoned-holds.ts';
import { createMediaActivities, type MediaServices } from './media/media-activities.ts';
import { createAsyncJobActivities } from './media/async-job-activities.ts';
import { createMediaSweepActivities } from './media/sweep.ts';
import { createCallbackActivities } from './media/callbacks.ts';
import { createMessengerActivities } from './messengers/messenger-activities.ts';
import type { MessengerClient } from './messengers/messenger.ts';
import type { MessengerPlatform } from '../common/messengers.ts';
import type { ProviderCalls } from './provider-calls.ts';
import { createTeamActivities } from './teams/team-broadcasts.ts';
import type { Pool } from '../db/pool.ts';
import { createRagActivities } from './rag/rag-activities.ts';
import { createResponseActivities } from './responses/response-store.ts';
import type { RagModel } from './rag/rag-model.ts';
import type { RagStore } from './rag/rag-store.ts';
import type { UserDataDatabase } from './user-data/data-database.ts';
import { ImportStore } from './user-data/import-store.ts';
import { createTableImportActivities, type UploadReader } from './user-data/table-import.ts';

export interface ActivityDependencies
  extends ChatActivityDependencies, AbandonedHoldDependencies, BatchLineDependencies {
  orm: MikroORM;
  calls: ProviderCalls;
  embeddingCalls: EmbeddingCalls;
  /** Embeddings for activities that need vectors (RAG indexing): EmbeddingService.embed. */
  embeddings: EmbeddingService;
  ledger: CreditLedger;
  accounts: AccountPlans;
  pool: Pool;
  messengers: Partial<Record<MessengerPlatform, MessengerClient>>;
  media: MediaServices;
  /** The users' data database and the uploads their tables are imported from (table imports). */
  userData: UserDataDatabase;
  uploads: UploadReader;
  /** The RAG index's tables and the model new indexes use (activities/rag/). */
  rag: RagStore;
  ragModel: RagModel;
  /** The durable capacity queue (activities/capacity/). */
  capacity: CapacityQueue;
}

export function createActivities(dependencies: ActivityDependencies) {
  return {
    ...createCompletionActivities(dependencies),
    ...createEmbeddingActivities(dependencies),
    ...createChatActivities(dependencies),
    ...createMessengerActivities(dependencies),
    ...createTeamActivities(dependencies),
    ...createMediaActivities(dependencies),
    ...createAsyncJobActivities(dependencies),
    ...createMediaSweepActivities(dependencies),
    ...createCallbackActivities(dependencies),
    ...createAbandonedHoldActivities(dependencies),
    ...createRagActivities(dependencies),
    ...createResponseActivities(dependencies),
    ...createBatchLineActivities(dependencies),
    ...createCapacityActivities(dependencies),
    ...createTableImportActivities({
      userData: dependencies.userData,
      uploads: dependencies.uploads,
      imports: new ImportStore(dependencies.pool),
    }),
    /** Grants the monthly credits of every account whose cycle ended (see credits/renewals.ts). */
    renewDueCycles: () => renewDueCycles(dependencies.orm, dependencies.accounts),
  };
}

export type Activities = ReturnType<typeof createActivities>;
