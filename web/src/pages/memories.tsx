/** Memories: what the agents remember of the person; list, search, add, delete. */
import { useState } from 'preact/hooks';
import { api, data } from '../api/client.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { Form, FormActions, SearchForm, TextArea, TextField } from '../components/form.tsx';
import { Page } from '../components/layout.tsx';
import { ItemCard, ItemList } from '../components/list.tsx';
import { ErrorNote, formatDate, useAction, useLoad, WhenLoaded } from '../components/ui.tsx';

export function MemoriesPage() {
  const [query, setQuery] = useState('');
  const [searched, setSearched] = useState('');
  const memories = useLoad(async () => {
    const answer = searched
      ? await data(api.GET('/memory/search', { params: { query: { q: searched } } }))
      : await data(api.GET('/memory/list'));
    return answer.memories;
  }, [searched]);
  const [content, setContent] = useState('');
  const [importance, setImportance] = useState(0.5);
  const add = useAction();
  const remove = useAction();

  return (
    <Page
      title="Memories"
      intro="Agents load the memories that fit a message into their context, and save new ones as they learn."
    >
      <Form
        card
        label="Add a memory"
        onSubmit={async () => {
          if (await add.run(() => data(api.POST('/memory/add', { body: { content: content.trim(), importance } })))) {
            setContent('');
            await memories.reload();
          }
        }}
      >
        <TextArea
          id="memory-content"
          label="Something to remember"
          rows={2}
          required
          maxLength={4000}
          value={content}
          onValue={setContent}
        />
        <div class="inline-form">
          <TextField
            id="memory-importance"
            label="Importance"
            inline
            type="range"
            min={0}
            max={1}
            step={0.1}
            value={importance}
            onValue={(value) => setImportance(Number(value))}
          />
          <output for="memory-importance">{importance.toFixed(1)}</output>
          <FormActions submit="Add memory" action={add} inline />
        </div>
      </Form>
      <SearchForm id="memory-search" label="Search memories" value={query} onValue={setQuery} onSearch={setSearched}>
        {searched ? (
          <button
            type="button"
            class="link-button"
            onClick={() => {
              setQuery('');
              setSearched('');
            }}
          >
            Show all
          </button>
        ) : null}
      </SearchForm>
      <ErrorNote error={remove.error} prefix="Deleting failed" />
      <WhenLoaded state={memories} what="memories">
        {(list) => (
          <ItemList label="Memories" items={list} empty={searched ? 'No memory matches.' : 'No memories yet.'}>
            {(memory) => (
              <ItemCard
                key={memory.id}
                actions={
                  <>
                    <small class="muted">
                      Importance {memory.importance.toFixed(1)} · {formatDate(memory.created_at)}
                    </small>
                    <ConfirmButton
                      label={`Delete memory: ${memory.content.slice(0, 40)}`}
                      warning="Agents will no longer recall it."
                      confirm="Yes, delete this memory"
                      onConfirm={async () => {
                        const path = { id: memory.id };
                        if (await remove.run(() => data(api.DELETE('/memory/{id}', { params: { path } }))))
                          await memories.reload();
                      }}
                    >
                      Delete
                    </ConfirmButton>
                  </>
                }
              >
                <p>{memory.content}</p>
              </ItemCard>
            )}
          </ItemList>
        )}
      </WhenLoaded>
    </Page>
  );
}
