/**
 * Google Drive API v3, enough for the drive tools (`/google/drive/v3/…`, uploads at `/google/upload/drive/v3/…`):
 * - `GET files?q&pageSize&pageToken&orderBy&fields`: files matching a Drive query (./drive-query.ts), trashed ones
 *   too unless it says `trashed = false`; `orderBy` with a `fullText` query is refused as on Drive; `fields` partial
 *   responses (default `kind,id,name,mimeType` per file).
 * - `GET files/{id}?fields` (metadata) and `?alt=media` (the bytes; 403 `fileNotDownloadable` for a Docs Editors
 *   file); `GET files/{id}/export?mimeType=` (a Doc as text/plain, a Sheet's first sheet as text/csv; 403
 *   `fileNotExportable` for other files).
 * - `POST upload/drive/v3/files?uploadType=multipart` (multipart/related: the metadata JSON, then the content):
 *   name, parents, appProperties, and a Docs Editors `mimeType` converts text to a Doc or CSV to a Sheet. At most
 *   5 MB.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../../transport.ts';
import { newId, type Account, type DriveFile } from './accounts.ts';
import { createDocument } from './docs.ts';
import { parseDriveQuery, QueryError, type QueryFile } from './drive-query.ts';
import { applyFields, badRequest, googleError, notFound, readBytes } from './http.ts';
import { sheetCsv, sheetFromCsv } from './sheets.ts';

const documentType = 'application/vnd.google-apps.document';
const spreadsheetType = 'application/vnd.google-apps.spreadsheet';
const folderType = 'application/vnd.google-apps.folder';
const maxMultipartBytes = 5 * 1024 * 1024;

export async function drive(
  request: IncomingMessage,
  response: ServerResponse,
  account: Account,
  path: string,
  url: URL,
  upload: boolean,
): Promise<void> {
  const parameters = url.searchParams;
  if (upload) {
    if (request.method === 'POST' && path === '/files') return create(request, response, account, parameters);
    return notFound(response);
  }
  if (request.method === 'GET' && path === '/files') return list(response, account, parameters);
  const match = /^\/files\/([^/]+)(\/export)?$/.exec(path);
  if (!match || request.method !== 'GET') return notFound(response);
  const id = decodeURIComponent(match[1]!);
  const file = account.files.find((candidate) => candidate.id === id);
  if (!file) return fileNotFound(response, id);
  if (match[2]) return exportFile(response, account, file, parameters.get('mimeType') ?? '');
  if (parameters.get('alt') === 'media') {
    if (file.mimeType.startsWith('application/vnd.google-apps.')) {
      return googleError(
        response,
        403,
        'Only files with binary content can be downloaded. Use Export with Docs Editors files.',
        {
          reason: 'fileNotDownloadable',
        },
      );
    }
    const content = file.content ?? Buffer.alloc(0);
    response.writeHead(200, { 'content-type': file.mimeType, 'content-length': content.length });
    response.end(content);
    return;
  }
  sendJson(response, 200, applyFields(present(account, file), parameters.get('fields') ?? 'kind,id,name,mimeType'));
}

function fileNotFound(response: ServerResponse, id: string): void {
  googleError(response, 404, `File not found: ${id}.`);
}

/** The text a full-text search looks through. */
function textOf(account: Account, file: DriveFile): string {
  if (file.mimeType === documentType) return account.documents.get(file.id)?.text ?? '';
  if (file.mimeType === spreadsheetType) {
    const spreadsheet = account.spreadsheets.get(file.id);
    return spreadsheet ? sheetCsv(spreadsheet) : '';
  }
  if (file.indexedText !== undefined) return file.indexedText;
  if (file.content && /^text\//.test(file.mimeType)) return file.content.toString('utf8');
  return '';
}

export function present(account: Account, file: DriveFile) {
  const link =
    file.mimeType === documentType
      ? `https://docs.google.com/document/d/${file.id}/edit?usp=drivesdk`
      : file.mimeType === spreadsheetType
        ? `https://docs.google.com/spreadsheets/d/${file.id}/edit?usp=drivesdk`
        : file.mimeType === folderType
          ? `https://drive.google.com/drive/folders/${file.id}`
          : `https://drive.google.com/file/d/${file.id}/view?usp=drivesdk`;
  return {
    kind: 'drive#file',
    id: file.id,
    name: file.name,
    mimeType: file.mimeType,
    parents: file.parents,
    createdTime: file.createdTime,
    modifiedTime: file.modifiedTime,
    ...(file.content ? { size: String(file.content.length) } : {}),
    webViewLink: link,
    owners: [{ kind: 'drive#user', displayName: account.name, emailAddress: account.email, me: true }],
    appProperties: file.appProperties,
    trashed: file.trashed,
  };
}

function list(response: ServerResponse, account: Account, parameters: URLSearchParams): void {
  const query = parameters.get('q') ?? '';
  let matches: Array<(file: QueryFile) => boolean> = [];
  try {
    if (query.trim()) matches = [parseDriveQuery(query)];
  } catch (error) {
    if (error instanceof QueryError) {
      return googleError(response, 400, 'Invalid Value', { reason: 'invalid' });
    }
    throw error;
  }
  const orderBy = parameters.get('orderBy');
  if (orderBy && /fullText/.test(query)) {
    return badRequest(
      response,
      'Sorting is not supported for queries with fullText terms. Results are always in descending relevance order.',
    );
  }
  // As on Drive, trashed files are found too unless the query says `trashed = false`.
  let files = account.files.filter((file) => {
    const view: QueryFile = { ...file, text: textOf(account, file) };
    return matches.every((test) => test(view));
  });
  if (orderBy?.startsWith('modifiedTime')) {
    const descending = orderBy.includes('desc');
    files = [...files].sort(
      (a, b) => (descending ? -1 : 1) * (Date.parse(a.modifiedTime) - Date.parse(b.modifiedTime)),
    );
  } else if (orderBy?.startsWith('name')) {
    files = [...files].sort((a, b) => a.name.localeCompare(b.name));
  }
  const pageSize = Math.min(Math.max(Number(parameters.get('pageSize') ?? 100) || 100, 1), 1000);
  const offset = Number(parameters.get('pageToken') ?? 0) || 0;
  const page = files.slice(offset, offset + pageSize);
  const answer = {
    kind: 'drive#fileList',
    ...(offset + pageSize < files.length ? { nextPageToken: String(offset + pageSize) } : {}),
    incompleteSearch: false,
    files: page.map((file) => present(account, file)),
  };
  sendJson(
    response,
    200,
    applyFields(answer, parameters.get('fields') ?? 'kind,nextPageToken,incompleteSearch,files(kind,id,name,mimeType)'),
  );
}

function exportFile(response: ServerResponse, account: Account, file: DriveFile, mimeType: string): void {
  const send = (type: string, text: string) => {
    const bytes = Buffer.from(text, 'utf8');
    response.writeHead(200, { 'content-type': `${type}; charset=utf-8`, 'content-length': bytes.length });
    response.end(bytes);
  };
  if (file.mimeType === documentType) {
    if (mimeType !== 'text/plain') return badRequest(response, 'The requested conversion is not supported.');
    return send('text/plain', account.documents.get(file.id)?.text ?? '');
  }
  if (file.mimeType === spreadsheetType) {
    if (mimeType !== 'text/csv') return badRequest(response, 'The requested conversion is not supported.');
    const spreadsheet = account.spreadsheets.get(file.id);
    return send('text/csv', spreadsheet ? sheetCsv(spreadsheet) : '');
  }
  googleError(response, 403, 'Export only supports Docs Editors files.', { reason: 'fileNotExportable' });
}

async function create(
  request: IncomingMessage,
  response: ServerResponse,
  account: Account,
  parameters: URLSearchParams,
): Promise<void> {
  if (parameters.get('uploadType') !== 'multipart') return badRequest(response, 'Invalid uploadType: use multipart');
  const type = request.headers['content-type'] ?? '';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (!/^multipart\/related/i.test(type) || !boundary) {
    return badRequest(response, 'Media type must be multipart/related with a boundary');
  }
  const body = await readBytes(request, maxMultipartBytes + 64 * 1024);
  if (!body) return googleError(response, 413, 'Request Too Large');
  const parts = splitMultipart(body, boundary);
  if (parts.length !== 2) return badRequest(response, 'A multipart upload has the metadata and the content');
  let metadata: { name?: unknown; mimeType?: unknown; parents?: unknown; appProperties?: unknown };
  try {
    metadata = JSON.parse(parts[0]!.body.toString('utf8')) as typeof metadata;
  } catch {
    return badRequest(response, 'The metadata is not JSON');
  }
  const content = parts[1]!.body;
  if (content.length > maxMultipartBytes) return googleError(response, 413, 'Request Too Large');
  const parents = Array.isArray(metadata.parents) ? metadata.parents.map(String) : ['root'];
  for (const parent of parents) {
    if (parent !== 'root' && !account.files.some((file) => file.id === parent && file.mimeType === folderType)) {
      return fileNotFound(response, parent);
    }
  }
  const name = typeof metadata.name === 'string' && metadata.name ? metadata.name : 'Untitled';
  const contentType = (parts[1]!.headers['content-type'] ?? 'application/octet-stream').split(';')[0]!.trim();
  const appProperties =
    typeof metadata.appProperties === 'object' && metadata.appProperties !== null
      ? Object.fromEntries(Object.entries(metadata.appProperties).map(([key, value]) => [key, String(value)]))
      : {};
  let file: DriveFile;
  if (metadata.mimeType === documentType) {
    const text = content.toString('utf8');
    file = createDocument(account, name, contentType === 'text/html' ? text.replace(/<[^>]*>/g, '') : text, parents);
  } else if (metadata.mimeType === spreadsheetType) {
    const now = new Date().toISOString();
    file = {
      id: newId(account, 'document'),
      name,
      mimeType: spreadsheetType,
      createdTime: now,
      modifiedTime: now,
      parents,
      appProperties: {},
      trashed: false,
    };
    account.files.push(file);
    account.spreadsheets.set(file.id, {
      sheets: [{ sheetId: 0, title: 'Sheet1', cells: sheetFromCsv(content.toString('utf8')) }],
    });
  } else {
    const now = new Date().toISOString();
    file = {
      id: newId(account, 'file'),
      name,
      mimeType: typeof metadata.mimeType === 'string' ? metadata.mimeType : contentType,
      createdTime: now,
      modifiedTime: now,
      parents,
      appProperties: {},
      trashed: false,
      content,
    };
    account.files.push(file);
  }
  file.appProperties = appProperties;
  sendJson(response, 200, applyFields(present(account, file), parameters.get('fields') ?? 'kind,id,name,mimeType'));
}

function splitMultipart(body: Buffer, boundary: string): Array<{ headers: Record<string, string>; body: Buffer }> {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: Array<{ headers: Record<string, string>; body: Buffer }> = [];
  let start = body.indexOf(delimiter);
  while (start >= 0) {
    const afterDelimiter = start + delimiter.length;
    if (body.subarray(afterDelimiter, afterDelimiter + 2).toString() === '--') break;
    const next = body.indexOf(delimiter, afterDelimiter);
    if (next < 0) break;
    let section = body.subarray(afterDelimiter, next);
    section = section.subarray(section.subarray(0, 2).toString() === '\r\n' ? 2 : 0);
    const split = section.indexOf('\r\n\r\n');
    const head = split < 0 ? '' : section.subarray(0, split).toString('utf8');
    let content = split < 0 ? section : section.subarray(split + 4);
    if (content.subarray(-2).toString() === '\r\n') content = content.subarray(0, -2);
    const headers = Object.fromEntries(
      head
        .split('\r\n')
        .filter((line) => line.includes(':'))
        .map((line) => [
          line.slice(0, line.indexOf(':')).trim().toLowerCase(),
          line.slice(line.indexOf(':') + 1).trim(),
        ]),
    );
    parts.push({ headers, body: content });
    start = next;
  }
  return parts;
}
