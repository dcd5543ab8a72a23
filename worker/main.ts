/**
 * The background worker process (`npm run worker`): polls the completions task queue, picking up anything
 * whose API process died, and (in later issues) media jobs and agent loops. SIGTERM drains.
 */
import { NativeConnection } from '@temporalio/worker';
import { loadCatalogue } from '../config/load-catalogue.ts';
import { loadPlans } from '../config/load-plans.ts';
import { readSettings } from '../config/settings.ts';
import { openOrm } from '../db/orm.ts';
import { createLogger } from '../process/logger.ts';
import { stopOnSignals } from '../process/signals.ts';
import { createWorker, createWorkerDependencies, installTemporalRuntime, stopWorker } from './create-worker.ts';
import { startTracing } from '../process/tracing.ts';

export async function startWorker(environment: Record<string, string | undefined> = process.env) {
  const settings = readSettings(environment);
  const catalogue = loadCatalogue(environment);
  // OpenTelemetry traces when a collector is named (OTEL_EXPORTER_OTLP_*ENDPOINT), else null and nothing installed.
  const tracing = await startTracing(environment, 'worker');
  const orm = await openOrm(settings.DATABASE_URL);
  installTemporalRuntime();
  const connection = await NativeConnection.connect({ address: settings.TEMPORAL_ADDRESS });
  const dependencies = createWorkerDependencies(
    orm,
    settings,
    catalogue,
    loadPlans(environment),
    undefined,
    environment,
  );
  const worker = await createWorker({ orm, connection, settings, catalogue, dependencies, tracing });
  // Stops of turns running here, asked for in an API process (activities/streaming/turn-stops.ts).
  await dependencies.stops.listen(dependencies.listener);
  await dependencies.listener.start();
  const running = worker.run();
  return {
    async close() {
      await stopWorker(worker, running);
      await dependencies.listener.close();
      await connection.close();
      await dependencies.pool.end();
      await dependencies.userData.close();
      await orm.close();
      await tracing?.flush().catch(() => undefined);
    },
  };
}

if (import.meta.main) {
  const worker = await startWorker();
  createLogger('worker').info('worker polling');
  stopOnSignals(worker.close);
}
