/**
 * A helper server the tests run as a child process (stripe-mock, gofakes3): started, its output read until a line
 * names the port it listens on, then drained so it never blocks on a full pipe; stopped with SIGTERM, then SIGKILL
 * after 5 s. A start that exits, fails to spawn or prints no port in time is killed and rejected with its output.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface RunningChildServer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  stop(): Promise<void>;
}

export function startChildServer(
  binary: string,
  args: string[],
  options: { label: string; portPattern: RegExp; startTimeoutMs?: number },
): Promise<RunningChildServer> {
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise<RunningChildServer>((resolve, reject) => {
    let output = '';
    const settle = () => {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stderr!.off('data', onData);
      child.off('error', onError);
      child.off('exit', onExit);
      child.stdout!.resume();
      child.stderr!.resume();
    };
    const fail = (error: Error) => {
      settle();
      child.kill('SIGKILL');
      reject(new Error(`${error.message}\n${output}`));
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = options.portPattern.exec(output);
      if (!match) return;
      settle();
      resolve({ url: `http://127.0.0.1:${match[1]}`, stop: () => stopChild(child) });
    };
    const onError = (error: Error) => fail(error);
    const onExit = (code: number | null, signal: string | null) =>
      fail(new Error(`${options.label} exited (${signal ?? `exit code ${code}`})`));
    const timer = setTimeout(
      () => fail(new Error(`${options.label} did not start listening in time`)),
      options.startTimeoutMs ?? 30_000,
    );
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('error', onError);
    child.on('exit', onExit);
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
