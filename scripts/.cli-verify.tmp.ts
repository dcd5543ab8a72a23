import { ensureTemporalCli } from './lib/temporal-cli.ts';
const tag = process.argv[2];
const t0 = Date.now();
const path = await ensureTemporalCli((l) => console.log(`[${tag}] ${l}`));
console.log(`[${tag}] got ${path} after ${Math.round((Date.now() - t0) / 1000)} s`);
