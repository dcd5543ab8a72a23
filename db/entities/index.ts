export { User } from './user.entity.ts';
export { ApiKey } from './api-key.entity.ts';
export { ProviderBreaker } from './provider-breaker.entity.ts';
export { StreamChunk } from './stream-chunk.entity.ts';

import { ApiKey } from './api-key.entity.ts';
import { ProviderBreaker } from './provider-breaker.entity.ts';
import { StreamChunk } from './stream-chunk.entity.ts';
import { User } from './user.entity.ts';

export const entities = [User, ApiKey, ProviderBreaker, StreamChunk];
