/**
 * A process's one LISTEN connection to PostgreSQL, shared by everything in the process that hears about changes made
 * elsewhere: the principal cache (`tessera_principals`: a key revoked, a plan changed) and the turn stops
 * (`tessera_turn_stops`: a person pressed Stop on a turn another process runs). NOTIFY is PostgreSQL's own broadcast,
 * so every replica hears every change with no broker added to the platform.
 *
 * A dropped connection is reconnected; each channel is told when it stops and starts listening again, since what was
 * sent meanwhile is lost (a cache empties itself, say).
 */
import pg from 'pg';
import type { Logger } from '../process/logger.ts';

export interface ChannelHandler {
  notify(payload: string): void;
  /** Listening (again): anything sent while nobody listened is unknown. */
  listening?(): void;
  /** The connection dropped: notifications are missed until `listening` again. */
  lost?(): void;
}

/** NOTIFY on `channel` through any connection (a pool, a transaction's client): every process's listener hears it. */
export async function notify(executor: Pick<pg.Pool, 'query'>, channel: string, payload: string): Promise<void> {
  await executor.query('select pg_notify($1, $2)', [channel, payload]);
}

export class PgListener {
  private readonly databaseUrl: string;
  private readonly logger: Logger;
  private readonly reconnectMs: number;
  private readonly channels = new Map<string, ChannelHandler>();
  private client: pg.Client | null = null;
  private connected = false;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | null = null;

  constructor(databaseUrl: string, logger: Logger, options: { reconnectMs?: number } = {}) {
    this.databaseUrl = databaseUrl;
    this.logger = logger;
    this.reconnectMs = options.reconnectMs ?? 1_000;
  }

  /** Listens on `channel` (from `start`, or at once when already connected). One handler per channel. */
  async subscribe(channel: string, handler: ChannelHandler): Promise<void> {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`invalid channel name ${channel}`);
    this.channels.set(channel, handler);
    const client = this.client;
    if (client && this.connected) {
      await client.query(`listen ${channel}`);
      handler.listening?.();
    }
  }

  /** Whether the connection is up and listening. */
  get listening(): boolean {
    return this.connected;
  }

  /** Connects and listens; while it cannot, it keeps trying in the background (each channel is told). */
  async start(): Promise<void> {
    await this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.connected = false;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    for (const handler of this.channels.values()) handler.lost?.();
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.databaseUrl, connectionTimeoutMillis: 5_000 });
    const lost = (error?: Error) => {
      if (this.client !== client) return;
      this.client = null;
      const wasConnected = this.connected;
      this.connected = false;
      void client.end().catch(() => undefined);
      for (const handler of this.channels.values()) handler.lost?.();
      if (this.closed) return;
      if (wasConnected || error) this.logger.warn({ err: error }, 'database listener lost; reconnecting');
      this.reconnectTimer = setTimeout(() => void this.connect(), this.reconnectMs);
      this.reconnectTimer.unref();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (message) => {
      if (message.payload !== undefined) this.channels.get(message.channel)?.notify(message.payload);
    });
    this.client = client;
    try {
      await client.connect();
      for (const channel of this.channels.keys()) await client.query(`listen ${channel}`);
      if (this.client !== client) return;
      this.connected = true;
      for (const handler of this.channels.values()) handler.listening?.();
    } catch (error) {
      lost(error as Error);
    }
  }
}
