/** Jest runs the TypeScript sources directly through SWC as native ESM (NODE_OPTIONS=--experimental-vm-modules). */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2023' }, module: { type: 'es6' } },
    ],
  },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
  testTimeout: 60_000,
  maxWorkers: 2,
  // Each test file starts a platform; a worker keeps some of each file's modules (ESM through vm modules), and after
  // some sixty files one ran out of its 4 GB heap. A worker above this after a file is replaced by a fresh one.
  workerIdleMemoryLimit: '1536MB',
  watchman: false,
};
