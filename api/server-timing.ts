/**
 * The gateway's own time for a request, by stage, in a standard `Server-Timing` header (milliseconds): what a client
 * or the bench can compare with the upstream's share without access to the server. Stages are consecutive: each
 * runs from the previous mark to its own; `upstream` is the provider call, which overlaps the others.
 */
/** What a service is told as each stage of a request ends (ServerTiming, or nothing where no header is sent). */
export interface StageMarks {
  mark(stage: string): void;
}

export class ServerTiming implements StageMarks {
  private readonly entries: Array<[string, number]> = [];
  private last = performance.now();

  /** Ends the stage that ran since the previous mark. */
  mark(stage: string): void {
    const now = performance.now();
    this.entries.push([stage, now - this.last]);
    this.last = now;
  }

  /** A duration measured elsewhere (e.g. the provider call, which runs alongside other stages). */
  add(stage: string, milliseconds: number): void {
    this.entries.push([stage, milliseconds]);
  }

  header(): string {
    return this.entries.map(([stage, ms]) => `${stage};dur=${ms.toFixed(2)}`).join(', ');
  }
}
