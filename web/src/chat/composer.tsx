/**
 * The composer: the message, the agent (automatic or one), an agent loop's limit, and up to `maxAttachments` files:
 * chosen with Attach (several at once), dropped on the composer or pasted into the message, each shown before it is
 * sent (an image as itself, another file by its name, kind and size) with a Remove button of its own. A file the
 * service would refuse (its kinds, its size, the account's quota with the files already attached) is refused here in
 * the same terms, before anything is sent; files chosen together are attached all or none. On Send each file is
 * uploaded in order: the images go to the model (`image_file_ids`), any other file is indexed and named in the message.
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
/**
 * The most files one message carries. Every one may be an image, and the service takes as many images per message
 * (`maxAttachedImages`, api/agents/routes/chat/schema.ts): one cap for both keeps the refusal simple to state.
 */
export const maxAttachments = 4;

/** The file's kind as its type or name says (the service decides by its bytes, and says so if they disagree). */
function kindOf(file: File): Kind | null {
  const extension = /\.([a-z0-9]+)$/i.exec(file.name)?.[1]?.toLowerCase() ?? '';
  return kindsByType[file.type] ?? kindsByExtension[extension] ?? null;
}

interface Attachment {
  /** The attachment's key in the list (the same file may be attached twice). */
  key: number;
  file: File;
  kind: Kind;
  /** A `blob:` URL of an image, revoked when the attachment goes. */
  preview: string | null;
}

/**
 * Why the service would refuse one of `files` for its size (upload-store.ts's rules: empty, the file limit, the
 * quota), each in turn: the quota counts the account's files, the files already attached (`attachedBytes`, uploaded
 * on Send) and those before it in `files`.
 */
async function sizeRefusal(files: File[], attachedBytes: number): Promise<string | null> {
  const empty = files.find((file) => file.size === 0);
  if (empty) return `${empty.name} is empty`;
  // The quota's figures alone (`limit=0`): not the list of every file the account has.
  const limits = await data(api.GET('/upload', { params: { query: { limit: 0 } } }));
  let used = limits.used_bytes + attachedBytes;
  for (const file of files) {
    if (file.size > limits.max_file_bytes) {
      return `${file.name} (${formatBytes(file.size)}) is larger than the limit of ${formatBytes(limits.max_file_bytes)}`;
    }
    if (used + file.size > limits.quota_bytes) {
      return (
        `${file.name} would take your files past your quota of ${formatBytes(limits.quota_bytes)} ` +
        `(${formatBytes(limits.used_bytes)} used, ${formatBytes(used - limits.used_bytes)} attached here): ` +
        'delete some files first'
      );
    }
    used += file.size;
  }
  return null;
}

let attachmentKeys = 0;

export function Composer(props: {
  sessionId: string;
  streaming: boolean;
  /** The agents to pick from: the conversation's list, read once for the composer and the transcript's actions. */
  agents: Array<{ id: string; name: string }>;
  onSend(
    request: { message: string; image_file_ids?: string[]; preferred_agents?: string[]; max_iterations?: number },
    loop: boolean,
    /** The attached files' names ("a.png, b.pdf"), for the transcript; null: none. */
    attachment: string | null,
  ): void;
}) {
  const [message, setMessage] = useState('');
  const [agent, setAgent] = useState('');
  const [loop, setLoop] = useState(false);
  const [iterations, setIterations] = useState(5);
  const [attachments, setAttachments] = useState<Attachment[]>([]);
  const [dragging, setDragging] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);
  const action = useAction();
  const attaching = useAction();
  // The files attached and those still being checked, counted as soon as they come: two drops in quick succession
  // cannot pass the cap together while the first is checked (the list itself changes only once a check ends).
  const claimed = useRef(0);

  // An image's preview URL lives as long as its attachment (removed, sent, or the composer gone): each one the list
  // drops is revoked, and all of them when the composer goes.
  const previews = useRef(new Set<string>());
  useLayoutEffect(() => {
    const kept = new Set(attachments.flatMap((item) => (item.preview ? [item.preview] : [])));
    for (const url of previews.current) if (!kept.has(url)) URL.revokeObjectURL(url);
    previews.current = kept;
  }, [attachments]);
  useLayoutEffect(
    () => () => {
      for (const url of previews.current) URL.revokeObjectURL(url);
    },
    [],
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
      const taken = claimed.current;
      if (taken + list.length > maxAttachments) {
        throw new Error(
          `a message carries at most ${maxAttachments} files (images, PDFs, workbooks or CSV files): ` +
            (taken ? `${taken} attached already, remove some or send them first` : `attach ${maxAttachments} or fewer`),
        );
      }
      claimed.current += list.length;
      try {
        await check(list);
      } catch (error) {
        claimed.current -= list.length;
        throw error;
      }
    });

  /** Checks files to attach (kind, size, quota) and lists them; throws the first refusal, attaching none. */
  const check = async (list: File[]) => {
    const kinds = list.map((file) => {
      const kind = kindOf(file);
      if (!kind) {
        throw new Error(
          `${file.name} is not a kind of file the service reads: attach a PNG, JPEG, WebP or GIF image, a PDF, ` +
            'an Excel workbook (xlsx) or a CSV file',
        );
      }
      return kind;
    });
    const attachedBytes = attachments.reduce((sum, item) => sum + item.file.size, 0);
    const refused = await sizeRefusal(list, attachedBytes);
    if (refused) throw new Error(refused);
    const added = list.map((file, index) => {
      const kind = kinds[index]!;
      return { key: ++attachmentKeys, file, kind, preview: imageKinds.has(kind) ? URL.createObjectURL(file) : null };
    });
    setAttachments((current) => [...current, ...added]);
  };

  const removeAttachment = (key: number) => {
    setAttachments((current) => current.filter((item) => item.key !== key));
    claimed.current -= 1;
    attaching.clear();
  };

  const submit = async (event?: Event) => {
    event?.preventDefault();
    const text = message.trim();
    if (!text || action.busy || attaching.busy) return;
    const files = attachments.map((item) => item.file);
    await action.run(async () => {
      const imageFileIds: string[] = [];
      const notes: string[] = [];
      // One after another, in the order shown: the images reach the model in that order.
      for (const file of files) {
        const uploaded = await uploadFile(file);
        // The service names an upload's kind by its format (png, jpeg …): its content type says it is an image.
        if (uploaded.content_type.startsWith('image/')) {
          imageFileIds.push(uploaded.id);
        } else {
          // Agents read uploads with their read_upload and rag_search tools, by the file's id.
          notes.push(`(Attached file: ${uploaded.file_name}, file id ${uploaded.id})`);
          await data(api.POST('/rag/index', { body: { file_id: uploaded.id } })).catch(() => undefined);
        }
      }
      props.onSend(
        {
          message: notes.length ? `${text}\n\n${notes.join('\n')}` : text,
          ...(imageFileIds.length ? { image_file_ids: imageFileIds } : {}),
          ...(agent ? { preferred_agents: [agent] } : {}),
          ...(loop ? { max_iterations: iterations } : {}),
        },
        loop,
        files.length ? files.map((file) => file.name).join(', ') : null,
      );
      setMessage('');
      setAttachments([]);
      claimed.current = 0;
      attaching.clear();
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
          Drop the files to attach them
        </div>
      ) : null}
      {attachments.length ? (
        <ul class="attachments" aria-label={`Attachments (${attachments.length} of at most ${maxAttachments})`}>
          {attachments.map((item) => (
            <li key={item.key} class="attachment-preview" aria-label={`Attachment ${item.file.name}`}>
              {item.preview ? (
                <img src={item.preview} alt={`Preview of ${item.file.name}`} />
              ) : (
                <span class="file-badge" aria-hidden="true">
                  {item.kind}
                </span>
              )}
              <span class="attachment-details">
                <span class="attachment-name">{item.file.name}</span>
                <span class="muted">
                  {kindNames[item.kind]} · {formatBytes(item.file.size)}
                </span>
              </span>
              <button type="button" class="secondary" disabled={action.busy} onClick={() => removeAttachment(item.key)}>
                Remove<span class="visually-hidden"> attachment {item.file.name}</span>
              </button>
            </li>
          ))}
        </ul>
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
          title={`Attach images or files, up to ${maxAttachments} (or drop them here, or paste an image)`}
          disabled={action.busy || attaching.busy || attachments.length >= maxAttachments}
          onClick={() => fileInput.current?.click()}
        >
          {attaching.busy ? 'Attaching…' : 'Attach'}
        </button>
        {/* Opened by Attach; the button is what people and screen readers meet. */}
        <input
          ref={fileInput}
          type="file"
          hidden
          multiple
          aria-label="Attach images or files"
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
