/**
 * Custom Temporal search attributes Tessera indexes its workflows by. Workflow-safe: no Node built-ins, no I/O.
 *
 * The dev server bootstrap (scripts/lib/temporal-server.ts) and docker-compose.yml create these in the namespace;
 * workflow starters set them through the typed keys below, e.g.
 * `typedSearchAttributes: [{ key: kindKey, value: 'chat' }]`.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Kind of workflow (e.g. `chat`, `agent`). */
export const kindKey = defineSearchAttributeKey('TesseraKind', SearchAttributeType.KEYWORD);
/** Id of the user/API key owner the workflow runs for. */
export const userKey = defineSearchAttributeKey('TesseraUser', SearchAttributeType.KEYWORD);
/** Model the request targets. */
export const modelKey = defineSearchAttributeKey('TesseraModel', SearchAttributeType.KEYWORD);

/** Every custom search attribute the namespace must have, with its type. */
export const tesseraSearchAttributes = [kindKey, userKey, modelKey] as const;
