import { ApiKey } from './api-key.entity.ts';
import { CreditLedgerEntry } from './credit-ledger-entry.entity.ts';
import { ProviderBreaker } from './provider-breaker.entity.ts';
import { RateLimitBucket } from './rate-limit-bucket.entity.ts';
import { StreamChunk } from './stream-chunk.entity.ts';
import { StripeEvent } from './stripe-event.entity.ts';
import { User } from './user.entity.ts';

export { ApiKey, CreditLedgerEntry, ProviderBreaker, RateLimitBucket, StreamChunk, StripeEvent, User };

export const entities = [User, ApiKey, ProviderBreaker, StreamChunk, CreditLedgerEntry, StripeEvent, RateLimitBucket];
