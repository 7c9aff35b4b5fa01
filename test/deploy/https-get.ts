/** An HTTPS GET trusting one CA (the deploy tests' dev certificates): status and whole body. */
import { get } from 'node:https';

export function httpsGet(url: string, ca: Buffer, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer }> {
  return new Promise((done, fail) => {
    get(url, { ca, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => done({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) }));
    }).on('error', fail);
  });
}
