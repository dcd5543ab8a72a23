/** Runs the provider simulator on its own (`npm run simulator`); SIMULATOR_PORT picks the port (default 4010). */
import { startSimulator } from '../simulator/server.ts';

const port = Number(process.env.SIMULATOR_PORT ?? 4010);
const host = process.env.SIMULATOR_HOST ?? '127.0.0.1';
const simulator = await startSimulator({ port, host });

console.log(`Provider simulator listening on ${simulator.url}`);
console.log(`  OpenAI-compatible base URL: ${simulator.url}/v1`);
console.log(`  Anthropic base URL:         ${simulator.url}`);
console.log(`  Gemini base URL:            ${simulator.url}`);
console.log(`  Control API:                ${simulator.url}/_simulator/faults, ${simulator.url}/_simulator/requests`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    if (stopping) return;
    stopping = true;
    simulator.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('closing the simulator failed', error);
        process.exit(1);
      },
    );
  });
}
