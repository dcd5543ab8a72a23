/** Signal handling every process of the platform shares: drain on SIGTERM/SIGINT, then exit. */
import { createLogger, type Logger } from './logger.ts';

/**
 * Stops on SIGTERM/SIGINT after draining; a second signal a second later exits at once. (A terminal's Ctrl-C
 * reaches the whole process group and `npm start` forwards SIGTERM too: that near-simultaneous pair is one.)
 * A process that `npm start` supervises (TESSERA_SUPERVISED=1, scripts/lib/supervisor.ts) also drains and exits
 * when its supervisor is gone (killed without the chance to stop it): nothing of the platform runs unsupervised.
 */
export function stopOnSignals(stop: () => Promise<void>, logger: Logger = createLogger('process')): void {
  let firstSignalAt = 0;
  const onSignal = (signal: string) => {
    if (firstSignalAt) {
      if (Date.now() - firstSignalAt > 1000) process.exit(1);
      return;
    }
    firstSignalAt = Date.now();
    logger.info({ signal }, 'draining');
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  if (process.env.TESSERA_SUPERVISED === '1') {
    const parent = process.ppid;
    const watch = setInterval(() => {
      if (process.ppid === parent) return;
      clearInterval(watch);
      onSignal('supervisor gone');
    }, 1_000);
    watch.unref();
  }
}
