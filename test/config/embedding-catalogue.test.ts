/**
 * The catalogue's embedding models and the default model rule (the model RAG embeds with when it names none): hosted
 * models with a key first, then the self-hosted server's model, then the local engine; EMBEDDING_MODEL wins.
 */
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultCataloguePath, loadCatalogue } from '../../config/load-catalogue.ts';
import { defaultEmbeddingModel } from '../../activities/routing/router.ts';

describe('embedding models in the catalogue', () => {
  it('loads the default file’s models, the local engine last', () => {
    const { catalogue } = loadCatalogue({});
    expect(catalogue.embeddingModels.map((model) => [model.id, model.dimensions, model.servedBy[0]!.provider])).toEqual(
      [
        ['text-embedding-3-small', 1536, 'openai'],
        ['text-embedding-3-large', 3072, 'openai'],
        ['gemini-embedding-001', 3072, 'google'],
        ['local-embedding', 512, 'local'],
      ],
    );
  });

  it('defaults to the local engine without keys, to a hosted model with one, and to EMBEDDING_MODEL when set', () => {
    expect(defaultEmbeddingModel(loadCatalogue({}).catalogue)?.id).toBe('local-embedding');
    expect(defaultEmbeddingModel(loadCatalogue({ GEMINI_API_KEY: 'k' }).catalogue)?.id).toBe('gemini-embedding-001');
    expect(defaultEmbeddingModel(loadCatalogue({ OPENAI_API_KEY: 'k' }).catalogue)?.id).toBe('text-embedding-3-small');
    const keyed = loadCatalogue({ OPENAI_API_KEY: 'k' }).catalogue;
    expect(defaultEmbeddingModel(keyed, 'local-embedding')?.id).toBe('local-embedding');
    expect(defaultEmbeddingModel(keyed, 'no-such-model')).toBeNull();
  });

  it('places the self-hosted embedding model before the local engine, and registers its server without a chat model', () => {
    const loaded = loadCatalogue({
      SELF_HOSTED_BASE_URL: 'http://127.0.0.1:11434/v1/',
      SELF_HOSTED_EMBEDDING_MODEL: 'nomic-embed-text',
      SELF_HOSTED_EMBEDDING_DIMENSIONS: '768',
    });
    const ids = loaded.catalogue.embeddingModels.map((model) => model.id);
    expect(ids.slice(-2)).toEqual(['nomic-embed-text', 'local-embedding']);
    expect(loaded.catalogue.embeddingModels.at(-2)).toMatchObject({
      dimensions: 768,
      shortenable: false,
      operatorOwned: true,
      servedBy: [{ provider: 'self-hosted', upstreamId: 'nomic-embed-text' }],
    });
    expect(loaded.endpoints.get('self-hosted')).toMatchObject({
      baseUrl: 'http://127.0.0.1:11434/v1',
      protocol: 'openai',
    });
    expect(loaded.catalogue.selfHosted).toBeNull();
    expect(defaultEmbeddingModel(loaded.catalogue)?.id).toBe('nomic-embed-text');
  });

  it('refuses an embedding model naming an unknown provider, or an id a chat model has', () => {
    const file = readFileSync(defaultCataloguePath, 'utf8');
    const write = (text: string) => {
      const path = join(mkdtempSync(join(tmpdir(), 'tessera-catalogue-')), 'models.yaml');
      writeFileSync(path, text);
      return path;
    };
    const unknownProvider = write(
      file.replace('{ provider: google, upstream_id: gemini-embedding-001 }', '{ provider: nobody, upstream_id: x }'),
    );
    expect(() => loadCatalogue({}, unknownProvider)).toThrow(
      /embedding_models\.2\.providers\.0\.provider: unknown provider nobody/,
    );
    const duplicate = write(file.replace('  - id: local-embedding', '  - id: gpt-4o'));
    expect(() => loadCatalogue({}, duplicate)).toThrow(/duplicate model gpt-4o/);
    const both = write(
      file.replace('    engine: local', '    engine: local\n    providers: [{ provider: openai, upstream_id: x }]'),
    );
    expect(() => loadCatalogue({}, both)).toThrow(/either providers or engine: local/);
  });
});
