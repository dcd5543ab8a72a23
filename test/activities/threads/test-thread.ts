/**
 * A tiny thread for the DeadlineWorker tests: answers with its thread id, or spins, throws, exits or fills its heap
 * when asked.
 */
import { threadId } from 'node:worker_threads';
import { serveCalls } from '../../../activities/threads/deadline-worker.ts';

export type TestRequest =
  | { op: 'echo'; value: string }
  | { op: 'spin'; ms: number }
  | { op: 'throw'; message: string }
  | { op: 'exit' }
  | { op: 'hog' };

export interface TestResponse {
  threadId: number;
  value: string;
}

function spin(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end);
}

const hoard: unknown[] = [];

serveCalls((request: TestRequest): TestResponse => {
  switch (request.op) {
    case 'echo':
      return { threadId, value: request.value };
    case 'spin':
      spin(request.ms);
      return { threadId, value: 'spun' };
    case 'throw':
      throw new Error(request.message);
    case 'exit':
      return process.exit(3);
    case 'hog':
      for (;;) hoard.push(new Array(100_000).fill(hoard.length));
  }
});
