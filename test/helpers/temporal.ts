/** The run's Temporal server for test files that run workflows on workers of their own (with stub activities). */
import { afterAll, beforeAll } from '@jest/globals';
import { NativeConnection } from '@temporalio/worker';
import { installTemporalRuntime } from '../../worker/create-worker.ts';

/** Opens a worker connection before the file's tests and closes it after; call the returned function to get it. */
export function useWorkerConnection(): () => NativeConnection {
  installTemporalRuntime('ERROR');
  let connection: NativeConnection | undefined;
  beforeAll(async () => {
    connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
  });
  afterAll(async () => {
    await connection?.close();
  });
  return () => {
    if (!connection) throw new Error('the Temporal connection is opened in beforeAll');
    return connection;
  };
}
