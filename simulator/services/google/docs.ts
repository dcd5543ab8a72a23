/**
 * Google Docs API v1, enough for the docs tools (`/google/v1/documents…`):
 * - `POST documents {title}`: a new, empty document (a Drive file too), `{documentId, title, body, revisionId}`.
 * - `GET documents/{id}`: the document: `body.content` a section break then one paragraph per line, each with its
 *   `startIndex`/`endIndex` (UTF-16 code units from 1, as Docs counts) and one text run.
 * - `POST documents/{id}:batchUpdate {requests, writeControl?}`: `insertText` at `location.index` (within the body,
 *   before its final newline) or at `endOfSegmentLocation`; a `writeControl.requiredRevisionId` that is not the
 *   current revision is 400 FAILED_PRECONDITION; another request kind is 400.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../../transport.ts';
import { newId, type Account, type Document, type DriveFile } from './accounts.ts';
import { badRequest, googleError, notFound, readJson } from './http.ts';

export async function docs(
  request: IncomingMessage,
  response: ServerResponse,
  account: Account,
  path: string,
): Promise<void> {
  if (request.method === 'POST' && path === '/documents') {
    const body = await readJson(request);
    const title = typeof body?.title === 'string' && body.title.trim() ? body.title : 'Untitled document';
    const file = createDocument(account, title, '');
    return sendJson(response, 200, present(file, account.documents.get(file.id)!));
  }
  const match = /^\/documents\/([^/:]+)(:batchUpdate)?$/.exec(path);
  if (!match) return notFound(response);
  const id = decodeURIComponent(match[1]!);
  const file = account.files.find((candidate) => candidate.id === id && !candidate.trashed);
  const document = account.documents.get(id);
  if (!file || !document) return notFound(response);
  if (request.method === 'GET' && !match[2]) return sendJson(response, 200, present(file, document));
  if (request.method !== 'POST' || !match[2]) return notFound(response);
  const body = await readJson(request);
  const requests = body?.requests;
  if (!Array.isArray(requests)) return badRequest(response, 'Invalid JSON payload: requests is required');
  const required = (body?.writeControl as { requiredRevisionId?: unknown } | undefined)?.requiredRevisionId;
  if (required !== undefined && required !== revisionId(file, document)) {
    return googleError(response, 400, 'The required revision ID does not match the latest revision.', {
      status: 'FAILED_PRECONDITION',
      reason: 'failedPrecondition',
    });
  }
  let text = document.text;
  for (const [index, item] of (requests as Array<Record<string, unknown>>).entries()) {
    const insert = item.insertText as
      { text?: unknown; location?: { index?: unknown }; endOfSegmentLocation?: unknown } | undefined;
    if (!insert || Object.keys(item).length !== 1) {
      return badRequest(response, `Invalid requests[${index}]: only insertText is supported here`);
    }
    if (typeof insert.text !== 'string') return badRequest(response, `Invalid requests[${index}].insertText: text`);
    let offset: number;
    if (insert.endOfSegmentLocation !== undefined) offset = text.length - 1;
    else if (typeof insert.location?.index === 'number') {
      offset = insert.location.index - 1;
      if (offset < 0 || offset > text.length - 1) {
        return badRequest(
          response,
          `Invalid requests[${index}].insertText: Index ${insert.location.index} must be less than the end index of the referenced segment, ${text.length + 1}.`,
        );
      }
    } else return badRequest(response, `Invalid requests[${index}].insertText: a location is required`);
    text = text.slice(0, offset) + insert.text + text.slice(offset);
  }
  document.text = text;
  document.revision += 1;
  file.modifiedTime = new Date().toISOString();
  sendJson(response, 200, {
    documentId: file.id,
    replies: requests.map(() => ({})),
    writeControl: { requiredRevisionId: revisionId(file, document) },
  });
}

/** A new Google Doc (a Drive file and its text). */
export function createDocument(account: Account, title: string, text: string, parents = ['root']): DriveFile {
  const now = new Date().toISOString();
  const file: DriveFile = {
    id: newId(account, 'document'),
    name: title,
    mimeType: 'application/vnd.google-apps.document',
    createdTime: now,
    modifiedTime: now,
    parents,
    appProperties: {},
    trashed: false,
  };
  account.files.push(file);
  account.documents.set(file.id, { revision: 1, text: text.endsWith('\n') ? text : `${text}\n` });
  return file;
}

const revisionId = (file: DriveFile, document: Document) =>
  `ALm37B${Buffer.from(`${file.id}:${document.revision}`).toString('base64url')}`;

function present(file: DriveFile, document: Document) {
  const content: unknown[] = [{ endIndex: 1, sectionBreak: { sectionStyle: { columnSeparatorStyle: 'NONE' } } }];
  let index = 1;
  for (const line of document.text.match(/[^\n]*\n/g) ?? []) {
    const end = index + line.length;
    content.push({
      startIndex: index,
      endIndex: end,
      paragraph: {
        elements: [{ startIndex: index, endIndex: end, textRun: { content: line, textStyle: {} } }],
        paragraphStyle: { namedStyleType: 'NORMAL_TEXT', direction: 'LEFT_TO_RIGHT' },
      },
    });
    index = end;
  }
  return {
    documentId: file.id,
    title: file.name,
    body: { content },
    revisionId: revisionId(file, document),
    suggestionsViewMode: 'SUGGESTIONS_INLINE',
  };
}
