/**
 * `drive_upload`: puts a file in the user's Google Drive (`files.create`, multipart upload): text the model wrote, or
 * a file of the conversation's sandbox (what file_write or code_execute made), optionally converted to a Google Doc
 * or Sheet. At most 5 MB (Google's limit for a multipart upload). The user approves it first. Uploaded once per tool
 * call: the file carries the call's key in `appProperties`, so an attempt that takes over from one that died looks
 * the file up before uploading again.
 */
import { constants } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { fileTypeFromBuffer } from 'file-type';
import { z } from 'zod';
import { openNoFollow, openSandbox, resolveSandboxPath } from '../sandbox.ts';
import { defineTool, ToolError, type ToolContext } from '../tool.ts';
import { driveFileFields, driveLiteral, presentFile, type DriveFile } from './drive-file.ts';
import { resourceId, workspaceWriteTool, writeOf } from './workspace-tool.ts';

const maxUploadBytes = 5 * 1024 * 1024;

const conversions = {
  document: 'application/vnd.google-apps.document',
  spreadsheet: 'application/vnd.google-apps.spreadsheet',
} as const;

export const driveUploadTool = defineTool({
  name: 'drive_upload',
  description:
    'Upload a file to the user’s Google Drive: either text you give (content) or a file of this conversation’s ' +
    'sandbox (path, as file_write and code_execute write them), at most 5 MB, optionally into a folder and ' +
    'optionally converted to a Google Doc (from text or HTML) or Google Sheet (from CSV). The user is asked to ' +
    'approve it.',
  input: z
    .object({
      name: z.string().trim().min(1).max(255).describe('The file’s name in Drive, e.g. "Meeting notes.txt"'),
      content: z.string().max(maxUploadBytes).optional().describe('The file’s text (give this or path)'),
      path: z.string().min(1).max(1_024).optional().describe('A sandbox file to upload (give this or content)'),
      mime_type: z
        .string()
        .regex(/^[a-z]+\/[a-z0-9.+-]+$/i, 'a MIME type such as text/csv')
        .optional()
        .describe('The content’s type (default: text/plain for content, detected for a file)'),
      folder_id: resourceId('A folder id to put the file in (default: My Drive)').optional(),
      convert_to: z.enum(['document', 'spreadsheet']).optional().describe('Convert to a Google Doc or Sheet'),
    })
    .strict()
    .refine((input) => (input.content === undefined) !== (input.path === undefined), {
      message: 'give exactly one of content and path',
    }),
  timeoutMs: 60_000,
  ...workspaceWriteTool,
  maxOutputChars: 1_500,
  async run(input, context) {
    const { google, userId, write } = writeOf(context, 'drive_upload');
    const { bytes, contentType } = await contentOf(input, context);
    const marker = createHash('sha256').update(write.callKey).digest('hex').slice(0, 40);
    return google.once(write, async ({ takeover }) => {
      if (takeover) {
        const found = (
          await google.request(
            userId,
            {
              family: 'drive',
              path: '/files',
              query: {
                q: `appProperties has { key='tesseraCall' and value=${driveLiteral(marker)} } and trashed = false`,
                fields: `files(${driveFileFields})`,
              },
            },
            context.signal,
          )
        ).json as { files?: DriveFile[] };
        if (found.files?.[0]) return { uploaded: true, file: presentFile(found.files[0]) };
      }
      const metadata = {
        name: input.name,
        ...(input.convert_to ? { mimeType: conversions[input.convert_to] } : {}),
        ...(input.folder_id ? { parents: [input.folder_id] } : {}),
        appProperties: { tesseraCall: marker },
      };
      const boundary = `tessera-${randomBytes(12).toString('hex')}`;
      const body = Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n${JSON.stringify(metadata)}\r\n` +
            `--${boundary}\r\nContent-Type: ${contentType}\r\n\r\n`,
        ),
        bytes,
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]);
      const file = (
        await google.request(
          userId,
          {
            family: 'driveUpload',
            method: 'POST',
            path: '/files',
            query: { uploadType: 'multipart', fields: driveFileFields },
            body: { contentType: `multipart/related; boundary=${boundary}`, data: body },
          },
          context.signal,
        )
      ).json as DriveFile;
      return { uploaded: true, file: presentFile(file) };
    });
  },
});

async function contentOf(
  input: { content?: string | undefined; path?: string | undefined; mime_type?: string | undefined },
  context: ToolContext,
): Promise<{ bytes: Buffer; contentType: string }> {
  if (input.content !== undefined) {
    const bytes = Buffer.from(input.content, 'utf8');
    if (bytes.length > maxUploadBytes) throw new ToolError('the content is larger than 5 MB');
    return { bytes, contentType: input.mime_type ?? 'text/plain; charset=UTF-8' };
  }
  const root = await openSandbox(context.settings, context.conversationId);
  const resolved = await resolveSandboxPath(root, input.path!);
  const file = await openNoFollow(resolved, constants.O_RDONLY);
  let bytes: Buffer;
  try {
    const stat = await file.stat();
    if (!stat.isFile()) throw new ToolError(`"${resolved.relative}" is not a file`);
    if (stat.size > maxUploadBytes) throw new ToolError(`"${resolved.relative}" is larger than 5 MB`);
    bytes = await file.readFile();
  } finally {
    await file.close();
  }
  const detected = input.mime_type ?? (await fileTypeFromBuffer(bytes))?.mime;
  const text = !bytes.includes(0) && Buffer.from(bytes.toString('utf8'), 'utf8').equals(bytes);
  return {
    bytes,
    contentType: detected ?? (text ? 'text/plain; charset=UTF-8' : 'application/octet-stream'),
  };
}
