import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { launch, type Launched } from '../../scripts/local/launcher.js';
import { freePort } from '../../scripts/local/ports.js';
import { aptInstall, which } from '../../scripts/local/install.js';
import { ensureRedisServer } from '../../scripts/local/services.js';

const run = promisify(execFile);

/** A self-signed CA, as a platform that signs its own Redis certificates has (Heroku Redis). */
export interface TestCa {
  certFile: string;
  keyFile: string;
  pem: string;
}

let openssl: Promise<void> | undefined;
/** openssl, installed with apt-get where it is missing (a slim Debian has none), as npm test does for redis-server. */
function ensureOpenssl(): Promise<void> {
  openssl ??= (async () => {
    if ((await which('openssl')) !== null) return;
    await aptInstall('openssl', 'openssl is not installed: apt-get install openssl', () => {});
  })();
  return openssl;
}

/** A CA of its own in `dir` (EC P-256, a day's validity), made with openssl. */
export async function makeCa(dir: string, name: string): Promise<TestCa> {
  await ensureOpenssl();
  const keyFile = join(dir, `${name}.key`);
  const certFile = join(dir, `${name}.crt`);
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    keyFile,
    '-out',
    certFile,
    '-days',
    '1',
    '-subj',
    `/CN=${name} platform CA`,
  ]);
  return { certFile, keyFile, pem: await readFile(certFile, 'utf8') };
}

/** A server certificate for 127.0.0.1 signed by `ca`. */
export async function makeServerCert(
  dir: string,
  ca: TestCa,
): Promise<{ certFile: string; keyFile: string }> {
  const keyFile = join(dir, 'server.key');
  const csrFile = join(dir, 'server.csr');
  const certFile = join(dir, 'server.crt');
  const extFile = join(dir, 'server.ext');
  await writeFile(extFile, 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  await run('openssl', [
    'req',
    '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    keyFile,
    '-out',
    csrFile,
    '-subj',
    '/CN=127.0.0.1',
  ]);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    csrFile,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    '-CAcreateserial',
    '-out',
    certFile,
    '-days',
    '1',
    '-extfile',
    extFile,
  ]);
  return { certFile, keyFile };
}

/** Debian's redis-server with TLS only: `--port 0` closes the plain port. */
export async function startTlsRedis(
  dir: string,
  ca: TestCa,
  server: { certFile: string; keyFile: string },
): Promise<{ tlsPort: number; launched: Launched }> {
  const tlsPort = await freePort();
  const launched = launch({
    name: 'redis-server (TLS)',
    command: await ensureRedisServer(() => {}),
    args: [
      '--port',
      '0',
      '--tls-port',
      String(tlsPort),
      '--bind',
      '127.0.0.1',
      '--tls-cert-file',
      server.certFile,
      '--tls-key-file',
      server.keyFile,
      '--tls-ca-cert-file',
      ca.certFile,
      '--tls-auth-clients',
      'no',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      'no',
      '--maxmemory-policy',
      'noeviction',
      '--loglevel',
      'warning',
    ],
    output: { file: join(dir, 'redis.log') },
    ready: { port: tlsPort },
    readyTimeoutMs: 30_000,
  });
  await launched.ready;
  return { tlsPort, launched };
}
