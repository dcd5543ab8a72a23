import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];

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
  {
    // Workflow code must stay deterministic: no Node built-ins, no I/O, only workflow-safe modules.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Workflows must not import Node built-ins.' })),
          patterns: [
            {
              group: ['../activities/*', '../db/*', '../api/*'],
              allowTypeImports: true,
              message: 'Workflows import activity types only.',
            },
          ],
        },
      ],
    },
  },
  {
    // The worker process and the plumbing both processes share depend only downward, never on the API.
    files: ['worker/**/*.ts', 'process/**/*.ts', 'activities/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['../api/*', '../../api/*', '../../../api/*'], message: 'Only the API depends on api/.' },
          ],
        },
      ],
    },
  },
  { files: ['**/*.js'], languageOptions: { globals: { process: 'readonly' } } },
);
