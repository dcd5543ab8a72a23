/** The composer: the message, the agent (automatic or one), an agent loop's limit, and an attachment. */
import { useRef, useState } from 'preact/hooks';
import { api, data } from '../api/client.ts';
import { uploadFile } from '../api/uploads.ts';
import { ErrorNote, useAction, useLoad } from '../components/ui.tsx';
import type { LiveTurn } from './live.ts';

export function Composer(props: {
  sessionId: string;
  streaming: boolean;
  live: LiveTurn[];
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
  const [file, setFile] = useState<File | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const action = useAction();
  const agents = useLoad(async () => (await data(api.GET('/agents'))).agents, []);

  const submit = async (event?: Event) => {
    event?.preventDefault();
    const text = message.trim();
    if (!text || action.busy) return;
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
      setFile(null);
      if (fileInput.current) fileInput.current.value = '';
    });
  };

  return (
    <form class="composer" onSubmit={submit} aria-label="Send a message">
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
      />
      <div class="composer-options">
        <label class="agent-picker">
          <span>Agent</span>
          <select value={agent} onChange={(event) => setAgent((event.target as HTMLSelectElement).value)}>
            <option value="">Automatic</option>
            {(agents.value ?? []).map((item) => (
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
        <label class="file-picker">
          <span>{file ? `Attached: ${file.name}` : 'Attach an image or file'}</span>
          <input
            ref={fileInput}
            type="file"
            accept="image/png,image/jpeg,image/webp,image/gif,application/pdf,text/csv,.csv,.xlsx"
            onChange={(event) => setFile((event.target as HTMLInputElement).files?.[0] ?? null)}
          />
        </label>
        {file ? (
          <button
            type="button"
            class="link-button"
            onClick={() => {
              setFile(null);
              if (fileInput.current) fileInput.current.value = '';
            }}
          >
            Remove attachment
          </button>
        ) : null}
        <button type="submit" class="send" disabled={action.busy || !message.trim()}>
          {action.busy ? 'Sending…' : 'Send'}
        </button>
      </div>
      <ErrorNote error={action.error} prefix="Not sent" />
      {props.streaming ? <span class="visually-hidden">An answer is streaming.</span> : null}
    </form>
  );
}
