import { ensureDatabase } from './lib/database.ts';
const log = (l: string) => console.log(new Date().toISOString().slice(11, 23), l);
const t0 = Date.now();
const db = await ensureDatabase({ dataDir: '/tmp/tverify/data', log });
console.log(
  'ready',
  db.url,
  db.embedded,
  Date.now() - t0 + 'ms',
  'listeners SIGINT:',
  process.listenerCount('SIGINT'),
  'exit:',
  process.listenerCount('exit'),
);
if (process.argv[2] === 'hold') {
  console.log('HOLDING');
  await new Promise((r) => setTimeout(r, Number(process.argv[3] ?? 20000)));
}
if (process.argv[2] !== 'nostop') {
  await db.stop();
  console.log('stopped');
} else {
  console.log('exiting without stop');
  process.exit(0);
}
