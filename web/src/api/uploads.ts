/** Uploading a file (`POST /upload`, multipart): the chat's attachments and the files page. */
import { api, data } from './client.ts';

export interface UploadedFile {
  id: string;
  file_name: string;
  kind: string;
  content_type: string;
  bytes: number;
  created_at: string;
  download_url: string;
  index?: IndexState | null;
}

export interface IndexState {
  id: string;
  status: 'queued' | 'extracting' | 'embedding' | 'done' | 'failed';
  progress?: { chunks_done: number; chunks_total: number | null };
  error?: string | null;
}

export async function uploadFile(file: File): Promise<UploadedFile> {
  const form = new FormData();
  form.append('file_name', file.name);
  form.append('file', file, file.name);
  return (await data(
    api.POST('/upload', {
      // The browser writes the multipart body and its boundary.
      body: form as never,
      bodySerializer: (body: unknown) => body as FormData,
    }),
  )) as UploadedFile;
}
