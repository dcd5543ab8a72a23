/**
 * A loopback TCP proxy a test can cut: everything sent to its port goes to `target`, until `cut()` closes its
 * listener (new connections are refused, as by a server that is down) and destroys the connections open through it
 * (as a server that died). `restore()` listens on the same port again. For a platform whose own PostgreSQL must fail
 * while the machine's server, which other tests share, stays up.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  const serve = (client: Socket) => {
    const upstream = connect(target.port, target.host);
    open.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream).pipe(client);
  };
  let server: Server = createServer(serve);
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        const address = server.address();
        resolve(typeof address === 'object' && address ? address.port : port);
      });
    });
  const port = await listen(0);
  const stop = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of open) socket.destroy();
    open.clear();
    await closed;
  };
  return {
    port,
    cut: stop,
    async restore() {
      server = createServer(serve);
      await listen(port);
    },
    close: async () => {
      if (server.listening) await stop();
    },
  };
}
