/** Google Drive files as the drive tools present them, and the query language's quoting. */

export interface DriveFile {
  id: string;
  name?: string;
  mimeType?: string;
  size?: string;
  modifiedTime?: string;
  webViewLink?: string;
  parents?: string[];
  owners?: Array<{ emailAddress?: string; displayName?: string }>;
}

/** The fields the drive tools ask for (`fields=`). */
export const driveFileFields = 'id,name,mimeType,size,modifiedTime,webViewLink,parents,owners(emailAddress)';

const kinds: Record<string, string> = {
  'application/vnd.google-apps.document': 'Google Doc',
  'application/vnd.google-apps.spreadsheet': 'Google Sheet',
  'application/vnd.google-apps.presentation': 'Google Slides',
  'application/vnd.google-apps.folder': 'folder',
  'application/pdf': 'PDF',
};

export function presentFile(file: DriveFile) {
  return {
    id: file.id,
    name: file.name ?? '',
    kind: kinds[file.mimeType ?? ''] ?? file.mimeType ?? 'file',
    ...(file.size ? { bytes: Number(file.size) } : {}),
    ...(file.modifiedTime ? { modified: file.modifiedTime } : {}),
    ...(file.owners?.[0]?.emailAddress ? { owner: file.owners[0].emailAddress } : {}),
    ...(file.webViewLink ? { link: file.webViewLink } : {}),
  };
}

/** A string literal of Drive's query language: single quotes, with `\` and `'` escaped. */
export function driveLiteral(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}
