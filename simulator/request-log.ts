/** Counts of the requests the simulator received, and the last one in full, for test assertions. */
import type { Protocol } from './faults.ts';

export interface LoggedRequest {
  protocol: Protocol;
  model: string;
  /** Path and query string. */
  path: string;
  /** Header names in lower case, as Node received them. */
  headers: Record<string, string>;
  body: unknown;
}

export interface RequestSummary {
  total: number;
  /** Of those, the ones whose response the simulator has sent in full (a test waits for an answer to be out). */
  answered: number;
  by_model: Record<string, number>;
  /** The most recent provider request, or null after a reset. */
  last: LoggedRequest | null;
}

/** What the control API reports under `GET /_simulator/requests`. */
export class RequestLog {
  private total = 0;
  private answered = 0;
  private byModel = new Map<string, number>();
  private last: LoggedRequest | null = null;

  record(request: LoggedRequest): void {
    this.total += 1;
    this.byModel.set(request.model, (this.byModel.get(request.model) ?? 0) + 1);
    this.last = request;
  }

  /** A recorded request's response was sent in full. */
  markAnswered(): void {
    this.answered += 1;
  }

  reset(): void {
    this.total = 0;
    this.answered = 0;
    this.byModel = new Map();
    this.last = null;
  }

  summary(): RequestSummary {
    return { total: this.total, answered: this.answered, by_model: Object.fromEntries(this.byModel), last: this.last };
  }
}
