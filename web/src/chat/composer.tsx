/**
 * The composer: the message, the agent (automatic or one), an agent loop's limit, and one attachment: chosen with
 * Attach, dropped on the composer or pasted into the message, shown before it is sent (an image as itself, another
 * file by its name, kind and size) with a Remove button. A file the service would refuse (its kinds, its size, the
 * account's quota) is refused here in the same terms, before anything is sent.
 */
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api, data } from '../api/client.ts';
import { uploadFile, type UploadedFile } from '../api/uploads.ts';
import { ErrorNote, formatBytes, useAction } from '../components/ui.tsx';

type Kind = UploadedFile['kind'];

/** The kinds the service reads (activities/uploads/upload-store.ts), by content type and by file extension. */
const kindsByType: Record<string, Kind> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'application/pdf': 'pdf',
  'text/csv': 'csv',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
};
const kindsByExtension: Record<string, Kind> = {
  png: 'png',
  jpg: 'jpeg',
  jpeg: 'jpeg',
  webp: 'webp',
  gif: 'gif',
  pdf: 'pdf',
  csv: 'csv',
  xlsx: 'xlsx',
};
const kindNames: Record<Kind, string> = {
  png: 'PNG image',
  jpeg: 'JPEG image',
  webp: 'WebP image',
  gif: 'GIF image',
  pdf: 'PDF document',
  csv: 'CSV file',
  xlsx: 'Excel workbook',
};
const imageKinds = new Set<Kind>(['png', 'jpeg', 'webp', 'gif']);
const accept = Object.keys(kindsByType).join(',') + ',.csv,.xlsx';

/** The file's kind as its type or name says (the service decides by its bytes, and says so if they disagree). */
function kindOf(file: File): Kind | null {
  const extension = /\.([a-z0-9]+)$/i.exec(file.name)?.[1]?.toLowerCase() ?? '';
  return kindsByType[file.type] ?? kindsByExtension[extension] ?? null;
}

interface Attachment {
  file: File;
  kind: Kind;
  /** A `blob:` URL of an image, revoked when the attachment goes. */
  preview: string | null;
}

/** Why the service would refuse `file` for its size (upload-store.ts's rules: empty, the file limit, the quota). */
async function sizeRefusal(file: File): Promise<string | null> {
  if (file.size === 0) return `${file.name} is empty`;
  // The quota's figures alone (`limit=0`): not the list of every file the account has.
  const limits = await data(api.GET('/upload', { params: { query: { limit: 0 } } }));
  if (file.size > limits.max_file_bytes) {
    return `${file.name} (${formatBytes(file.size)}) is larger than the limit of ${formatBytes(limits.max_file_bytes)}`;
  }
  if (limits.used_bytes + file.size > limits.quota_bytes) {
    return (
      `${file.name} would take your files past your quota of ${formatBytes(limits.quota_bytes)} ` +
      `(${formatBytes(limits.used_bytes)} used): delete some files first`
    );
  }
  return null;
}

export function Composer(props: {
  sessionId: string;
  streaming: boolean;
  /** The agents to pick from: the conversation's list, read once for the composer and the transcript's actions. */
  agents: Array<{ id: string; name: string }>;
  onSend(
    request: { message: string; image_file_id?: string; preferred_agents?: string[]; max_iterations?: number },
    loop: boolean,
    attachment: string | null,
  ): void;
}) {
  const [message, setMessage] = useState('');
  const [agent, setAgent] = useState('');
  const [loop, setLoop] = useState(false);
  const [iterations, setIterations] = useState(5);
  const [attachment, setAttachment] = useState<Attachment | null>(null);
  const [dragging, setDragging] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);
  const action = useAction();
  const attaching = useAction();

  // An image's preview URL lives as long as its attachment (replaced, removed, sent, or the composer gone).
  useLayoutEffect(
    () => () => {
      if (attachment?.preview) URL.revokeObjectURL(attachment.preview);
    },
    [attachment],
  );
  // A file dropped beside the composer would make the browser open it in place of the chat: such a drop does nothing.
  useEffect(() => {
    const ignore = (event: DragEvent) => {
      if (event.dataTransfer?.types.includes('Files')) event.preventDefault();
    };
    window.addEventListener('dragover', ignore);
    window.addEventListener('drop', ignore);
    return () => {
      window.removeEventListener('dragover', ignore);
      window.removeEventListener('drop', ignore);
    };
  }, []);

  const attach = (files: FileList | File[] | null | undefined) =>
    attaching.run(async () => {
      const list = [...(files ?? [])];
      // The input forgets its choice, so choosing the same file again (after a refusal or a removal) is a change.
      if (fileInput.current) fileInput.current.value = '';
      if (list.length === 0) return;
      if (list.length > 1) throw new Error('one file at a time: attach one, send it, then the next');
      const file = list[0]!;
      const kind = kindOf(file);
      if (!kind) {
        throw new Error(
          `${file.name} is not a kind of file the service reads: attach a PNG, JPEG, WebP or GIF image, a PDF, ` +
            'an Excel workbook (xlsx) or a CSV file',
        );
      }
      const refused = await sizeRefusal(file);
      if (refused) throw new Error(refused);
      setAttachment({ file, kind, preview: imageKinds.has(kind) ? URL.createObjectURL(file) : null });
    });

  const removeAttachment = () => {
    setAttachment(null);
    attaching.clear();
  };

  const submit = async (event?: Event) => {
    event?.preventDefault();
    const text = message.trim();
    if (!text || action.busy || attaching.busy) return;
    const file = attachment?.file ?? null;
    await action.run(async () => {
      let imageFileId: string | undefined;
      let note = '';
      if (file) {
        const uploaded = await uploadFile(file);
        // The service names an upload's kind by its format (png, jpeg …): its content type says it is an image.
        if (uploaded.content_type.startsWith('image/')) {
          imageFileId = uploaded.id;
        } else {
          // Agents read uploads with their read_upload and rag_search tools, by the file's id.
          note = `\n\n(Attached file: ${uploaded.file_name}, file id ${uploaded.id})`;
          await data(api.POST('/rag/index', { body: { file_id: uploaded.id } })).catch(() => undefined);
        }
      }
      props.onSend(
        {
          message: text + note,
          ...(imageFileId ? { image_file_id: imageFileId } : {}),
          ...(agent ? { preferred_agents: [agent] } : {}),
          ...(loop ? { max_iterations: iterations } : {}),
        },
        loop,
        file ? file.name : null,
      );
      setMessage('');
      removeAttachment();
    });
  };

  const draggingFiles = (event: DragEvent) => {
    if (!event.dataTransfer?.types.includes('Files')) return false;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
    return true;
  };

  return (
    <form
      class={`composer${dragging ? ' dragging' : ''}`}
      onSubmit={submit}
      aria-label="Send a message"
      onDragEnter={(event) => setDragging(draggingFiles(event))}
      onDragOver={(event) => setDragging(draggingFiles(event))}
      onDragLeave={(event) => {
        if (!event.currentTarget.contains(event.relatedTarget as Node | null)) setDragging(false);
      }}
      onDrop={(event) => {
        if (!draggingFiles(event)) return;
        setDragging(false);
        void attach(event.dataTransfer?.files);
      }}
    >
      {dragging ? (
        <div class="drop-zone" aria-hidden="true">
          Drop the file to attach it
        </div>
      ) : null}
      {attachment ? (
        <div class="attachment-preview" role="group" aria-label="Attachment">
          {attachment.preview ? (
            <img src={attachment.preview} alt={`Preview of ${attachment.file.name}`} />
          ) : (
            <span class="file-badge" aria-hidden="true">
              {attachment.kind}
            </span>
          )}
          <span class="attachment-details">
            <span class="attachment-name">{attachment.file.name}</span>
            <span class="muted">
              {kindNames[attachment.kind]} · {formatBytes(attachment.file.size)}
            </span>
          </span>
          <button type="button" class="secondary" disabled={action.busy} onClick={removeAttachment}>
            Remove<span class="visually-hidden"> attachment {attachment.file.name}</span>
          </button>
        </div>
      ) : null}
      <label for="composer-message" class="visually-hidden">
        Message
      </label>
      <textarea
        id="composer-message"
        rows={3}
        placeholder="Message (Enter sends, Shift+Enter for a new line)"
        value={message}
        maxLength={32000}
        onInput={(event) => setMessage((event.target as HTMLTextAreaElement).value)}
        onKeyDown={(event) => {
          if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
            event.preventDefault();
            void submit();
          }
        }}
        onPaste={(event) => {
          // A pasted image (a screenshot, an image copied from a page) comes as a file: attached, not pasted as text.
          const files = event.clipboardData?.files;
          if (files?.length) {
            event.preventDefault();
            void attach(files);
          }
        }}
      />
      <div class="composer-options">
        <label class="agent-picker">
          <span>Agent</span>
          <select value={agent} onChange={(event) => setAgent((event.target as HTMLSelectElement).value)}>
            <option value="">Automatic</option>
            {props.agents.map((item) => (
              <option key={item.id} value={item.id}>
                {item.name}
              </option>
            ))}
          </select>
        </label>
        <label class="checkbox">
          <input
            type="checkbox"
            checked={loop}
            onChange={(event) => setLoop((event.target as HTMLInputElement).checked)}
          />
          <span>Agent loop</span>
        </label>
        {loop ? (
          <label>
            <span>Iterations at most</span>
            <input
              type="number"
              min={1}
              max={200}
              value={iterations}
              class="narrow"
              onInput={(event) => setIterations(Number((event.target as HTMLInputElement).value) || 1)}
            />
          </label>
        ) : null}
        <button
          type="button"
          class="secondary"
          title="Attach an image or a file (or drop one here, or paste an image)"
          disabled={action.busy || attaching.busy}
          onClick={() => fileInput.current?.click()}
        >
          {attaching.busy ? 'Attaching…' : 'Attach'}
        </button>
        {/* Opened by Attach; the button is what people and screen readers meet. */}
        <input
          ref={fileInput}
          type="file"
          hidden
          aria-label="Attach an image or file"
          accept={accept}
          onChange={(event) => void attach((event.target as HTMLInputElement).files)}
        />
        <button type="submit" class="send" disabled={action.busy || attaching.busy || !message.trim()}>
          {action.busy ? 'Sending…' : 'Send'}
        </button>
      </div>
      <ErrorNote error={attaching.error} prefix="Not attached" />
      <ErrorNote error={action.error} prefix="Not sent" />
      {props.streaming ? <span class="visually-hidden">An answer is streaming.</span> : null}
    </form>
  );
}
