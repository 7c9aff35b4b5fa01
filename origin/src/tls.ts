/**
 * TLS for the origin: HTTP/1.1 over TLS, ending in this process (the clamp and TCP_INFO act on the
 * viewer's own TCP connection; a TLS proxy in front would be the one paced). HTTP/2 is not offered:
 * it multiplexes responses on one connection, which a per-response clamp cannot tell apart, so ALPN
 * says "http/1.1" and h2 clients fall back to it.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { OriginError } from './errors.js';

export interface TlsFiles {
  readonly cert: string;
  readonly key: string;
}

export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** The leaf certificate's subject, expiry and fingerprint, for the logs. */
  readonly summary: { readonly subject: string; readonly validTo: string; readonly fingerprint256: string };
}

/** What the server is given: the pair, ALPN for HTTP/1.1 only, TLS 1.2 at least. */
export function serverTlsOptions(material: TlsMaterial): SecureContextOptions & { ALPNProtocols: string[] } {
  return { cert: material.cert, key: material.key, minVersion: 'TLSv1.2', ALPNProtocols: ['http/1.1'] };
}

/** Reads and checks the pair (PEM, parseable, the key matches the certificate): one coded error otherwise. */
export async function loadTlsMaterial(files: TlsFiles): Promise<TlsMaterial> {
  const read = async (what: 'certificate' | 'key', path: string) => {
    try {
      return await readFile(path);
    } catch (error) {
      throw new OriginError(
        'ORIGIN_ERR_TLS',
        `cannot read the TLS ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        { file: path },
        { cause: error },
      );
    }
  };
  const [cert, key] = await Promise.all([read('certificate', files.cert), read('key', files.key)]);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(cert);
  } catch (error) {
    throw new OriginError(
      'ORIGIN_ERR_TLS',
      `${files.cert} is not a PEM certificate: ${(error as Error).message}`,
      { file: files.cert },
      { cause: error },
    );
  }
  try {
    createSecureContext({ cert, key });
  } catch (error) {
    throw new OriginError(
      'ORIGIN_ERR_TLS',
      `the TLS key ${files.key} does not fit the certificate ${files.cert}: ${(error as Error).message}`,
      { file: files.key },
      { cause: error },
    );
  }
  return {
    cert,
    key,
    summary: {
      subject: leaf.subject.replaceAll('\n', ', '),
      validTo: leaf.validTo,
      fingerprint256: leaf.fingerprint256,
    },
  };
}

export interface DevCertificates {
  /** The CA's certificate (PEM): what clients are told to trust. */
  readonly caCert: string;
  /** The server's chain (its certificate, then the CA's) and key: `tls.cert` and `tls.key`. */
  readonly cert: string;
  readonly key: string;
}

/**
 * A throwaway CA and a server certificate it signs for `hosts` (names or IP addresses), made with
 * the openssl CLI: HTTPS in development and tests. Never for production: the CA key sits beside.
 */
export async function makeDevCertificates(dir: string, hosts: readonly string[], days = 30): Promise<DevCertificates> {
  await mkdir(dir, { recursive: true });
  const path = (name: string) => join(dir, name);
  const openssl = (args: string[]) =>
    new Promise<void>((resolve, reject) => {
      execFile('openssl', args, (error, _stdout, stderr) => {
        if (error === null) resolve();
        else if ((error as NodeJS.ErrnoException).code === 'ENOENT')
          reject(new OriginError('ORIGIN_ERR_TLS', 'openssl is not on PATH (Debian: apt-get install openssl)'));
        else
          reject(
            new OriginError(
              'ORIGIN_ERR_TLS',
              `openssl ${args[0]} failed: ${stderr.trim().split('\n')[0] ?? error.message}`,
            ),
          );
      });
    });
  const names = hosts.map((host) => (isIP(host) !== 0 ? `IP:${host}` : `DNS:${host}`)).join(',');
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    path('ca.key'),
    '-out',
    path('ca.pem'),
    '-days',
    String(days),
    '-subj',
    '/CN=Trickle development CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  await openssl([
    'req',
    ...ec,
    '-keyout',
    path('key.pem'),
    '-out',
    path('server.csr'),
    '-subj',
    `/CN=${hosts[0] ?? 'localhost'}`,
  ]);
  await writeFile(
    path('server.ext'),
    `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=` +
      `${names}\n`,
  );
  await openssl([
    'x509',
    '-req',
    '-in',
    path('server.csr'),
    '-CA',
    path('ca.pem'),
    '-CAkey',
    path('ca.key'),
    '-CAcreateserial',
    '-out',
    path('server.pem'),
    '-days',
    String(days),
    '-extfile',
    path('server.ext'),
  ]);
  await writeFile(
    path('chain.pem'),
    Buffer.concat([await readFile(path('server.pem')), await readFile(path('ca.pem'))]),
  );
  return { caCert: path('ca.pem'), cert: path('chain.pem'), key: path('key.pem') };
}
