/** A connected loopback TCP pair for the socket tests: the listening server, its accepted side, the client. */
import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';

export async function connectedPair(): Promise<{ server: Server; serverSide: Socket; client: Socket }> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const client = connect((server.address() as { port: number }).port, '127.0.0.1');
  await once(client, 'connect');
  const [serverSide] = await accepted;
  return { server, serverSide, client };
}
