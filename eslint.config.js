import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];

/**
 * What each room of the runtime may import, lowest first: common (shared types and pure helpers), config (settings
 * and catalogues), process (logging, signals, tracing), db (the database), activities (the work: providers, tools,
 * stores), workflows (durable orchestration: common at run time, activities' types only, as Temporal's proxies need),
 * worker (the process that runs workflows and activities), api (the HTTP services, which also host a worker and serve
 * the web app). No runtime room imports scripts/, bench/, test/ or simulator/: tools rest on the runtime, never the
 * reverse.
 */
const rooms = {
  common: { may: ['common'] },
  config: { may: ['common', 'config'] },
  process: { may: ['common', 'config', 'process'] },
  db: { may: ['common', 'config', 'process', 'db'] },
  activities: { may: ['common', 'config', 'process', 'db', 'activities'] },
  workflows: { may: ['common', 'workflows'], typesOf: ['activities'] },
  worker: { may: ['common', 'config', 'process', 'db', 'activities', 'workflows', 'worker'] },
  // The agent service serves the web app: it reads the app's page paths (web/routes.ts, shared with the app's router).
  api: { may: ['common', 'config', 'process', 'db', 'activities', 'workflows', 'worker', 'api', 'web'] },
};
const everyRoom = [...Object.keys(rooms), 'scripts', 'bench', 'test', 'simulator', 'web'];
const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function roomRules() {
  const blocks = [];
  for (const [room, { may, typesOf = [] }] of Object.entries(rooms)) {
    for (let depth = 1; depth <= 6; depth++) {
      const up = escape('../'.repeat(depth));
      const named = (names) => `^${up}(${names.join('|')})/`;
      const forbidden = everyRoom.filter((name) => !may.includes(name) && !typesOf.includes(name));
      const patterns = [
        {
          regex: named(forbidden),
          message: `${room}/ may import only ${[...may, ...typesOf].join(', ')} (eslint.config.js, rooms).`,
        },
      ];
      if (typesOf.length) {
        patterns.push({
          regex: named(typesOf),
          allowTypeImports: true,
          message: `${room}/ may import only the types of ${typesOf.join(', ')}.`,
        });
      }
      blocks.push({
        files: [`${room}/${'*/'.repeat(depth - 1)}*.ts`],
        rules: {
          'no-restricted-imports': [
            'error',
            {
              // Workflow code must stay deterministic: no Node built-ins (the workflow sandbox has none either).
              ...(room === 'workflows'
                ? {
                    paths: nodeBuiltins.map((name) => ({ name, message: 'Workflows must not import Node built-ins.' })),
                  }
                : {}),
              patterns,
            },
          ],
        },
      });
    }
  }
  return blocks;
}

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      '.data/**',
      'coverage/**',
      'db/migrations/.snapshot-*.json',
      'web/dist/**',
      'web/dist-*/**',
      'web/src/api/schema.d.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  // The house's rooms and the direction of their imports (docs/design-notes.md, "Rooms"), one block per room and
  // folder depth, so that a relative path is known to climb to the repository's root before it names a room.
  ...roomRules(),
  { files: ['**/*.js'], languageOptions: { globals: { process: 'readonly' } } },
);
