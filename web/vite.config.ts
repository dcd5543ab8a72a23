/**
 * Vite's configuration of the web app: one entry (index.html), hashed names under assets/, no module-preload
 * polyfill (every browser the app supports has modulepreload, and the polyfill would be an inline-able script),
 * no public folder (everything the page loads is imported, so hashed). JSX is Preact's (tsconfig.json).
 * `npx vite --config web/vite.config.ts` serves it in development with hot reload, sending API paths to the agent
 * service on AGENT_URL (default http://127.0.0.1:8081).
 */
import { fileURLToPath } from 'node:url';
import type { InlineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export const viteConfig: InlineConfig = {
  root,
  configFile: false,
  publicDir: false,
  base: '/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    target: 'es2022',
    outDir: 'dist',
    assetsDir: 'assets',
    modulePreload: { polyfill: false },
    sourcemap: false,
    // Fonts and icons stay files (with hashed names), never data: URLs inlined into CSS or scripts.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  server: {
    proxy: Object.fromEntries(
      [
        '^/(auth|link|api|billing|agents|chat|sessions|history|search|usage|memory|schedule|deploy|teams|upload|rag|sql|share|s|export|dashboard|admin/api)(/|$)',
      ].map((pattern) => [pattern, { target: process.env.AGENT_URL ?? 'http://127.0.0.1:8081', changeOrigin: false }]),
    ),
  },
};

export default viteConfig;
