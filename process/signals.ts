/** Signal handling every process of the platform shares: drain on SIGTERM/SIGINT, then exit. */
import { createLogger, type Logger } from './logger.ts';

/**
 * Stops on SIGTERM/SIGINT after draining; a second signal a second later exits at once. (A terminal's Ctrl-C
 * reaches the whole process group and `npm start` forwards SIGTERM too: that near-simultaneous pair is one.)
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
}
