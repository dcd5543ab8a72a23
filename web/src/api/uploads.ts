/** Uploading a file (`POST /upload`, multipart): the chat's attachments and the files page. */
import { api, data, type Answer } from './client.ts';

export type UploadedFile = Answer<'/upload', 'get'>['files'][number];

export type IndexState = NonNullable<UploadedFile['index']>;

export async function uploadFile(file: File): Promise<UploadedFile> {
  return data(
    api.POST('/upload', {
      // The document types a binary part as a string (openapi-typescript's reading of `format: binary`); the
      // serializer sends the File itself as a multipart form, whose boundary the browser writes.
      body: { file: file as unknown as string, file_name: file.name },
      bodySerializer: () => {
        const form = new FormData();
        form.append('file_name', file.name);
        form.append('file', file, file.name);
        return form;
      },
    }),
  );
}
