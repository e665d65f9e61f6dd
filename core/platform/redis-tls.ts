// TLS to Redis when the platform signs the server's certificate itself (Heroku Redis): the CA
// to verify against (REDIS_TLS_CA), or verification off (REDIS_TLS_REJECT_UNAUTHORIZED=false).
// Kept apart from redis.ts so every connection takes the same options from one place.
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { ConfigError } from './config.js';
import type { Logger } from './logger.js';
import type { RedisClient } from './redis.js';

export interface RedisTlsSettings {
  /** PEM of the CA the server's certificate must chain to; unset: the system's CAs. */
  ca?: string;
  rejectUnauthorized: boolean;
}

interface TlsConfig {
  redisUrl: string;
  redisTlsCa?: string | undefined;
  redisTlsRejectUnauthorized: boolean;
}

const PEM_CERTIFICATE = '-----BEGIN CERTIFICATE-----';

const usesTls = (config: TlsConfig): boolean => config.redisUrl.startsWith('rediss:');

/**
 * The TLS part of the Redis settings; undefined when ioredis's own handling of the URL will do
 * (`redis://`, or `rediss://` verified against the system's CAs). REDIS_TLS_CA is PEM text or
 * the path of a PEM file (a mounted secret); either is read once, here, and refused if it holds
 * no certificate. A CA with a `redis://` URL is refused: the operator means to verify a server
 * that would in fact be reached in plain text.
 */
export function redisTlsSettings(config: TlsConfig): RedisTlsSettings | undefined {
  if (config.redisTlsCa !== undefined && !usesTls(config)) {
    throw new ConfigError(['REDIS_TLS_CA is set but REDIS_URL is not rediss:// (TLS)']);
  }
  if (!usesTls(config)) return undefined;
  if (config.redisTlsCa === undefined && config.redisTlsRejectUnauthorized) return undefined;
  return {
    ...(config.redisTlsCa === undefined ? {} : { ca: readCa(config.redisTlsCa) }),
    rejectUnauthorized: config.redisTlsRejectUnauthorized,
  };
}

function readCa(value: string): string {
  let pem = value;
  if (!value.trimStart().startsWith('-----BEGIN')) {
    try {
      pem = readFileSync(value, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
      throw new ConfigError([
        `REDIS_TLS_CA is neither PEM text (${PEM_CERTIFICATE}) nor a readable file (${code})`,
      ]);
    }
  }
  if (!pem.includes(PEM_CERTIFICATE)) {
    throw new ConfigError([`REDIS_TLS_CA holds no PEM certificate (${PEM_CERTIFICATE})`]);
  }
  return pem;
}

/** The `tls` option of ioredis (and of Node's tls.connect) for these settings. */
export function tlsOptions(tls: RedisTlsSettings): ConnectionOptions {
  return { ...(tls.ca === undefined ? {} : { ca: tls.ca }), rejectUnauthorized: tls.rejectUnauthorized };
}

/** Node's codes for a certificate that does not verify: reconnecting will never fix these. */
const CERTIFICATE_ERRORS = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** What a start-up certificate failure says: the Node code and the variable to fix. */
export function certificateFailure(code: string, config: Pick<TlsConfig, 'redisTlsCa'>): string {
  return config.redisTlsCa === undefined
    ? `Redis TLS: the server's certificate is not trusted (${code}); set REDIS_TLS_CA to the CA that signed it (or REDIS_TLS_REJECT_UNAUTHORIZED=false to skip verification); see docs/redis.md`
    : `Redis TLS: the server's certificate does not verify against REDIS_TLS_CA (${code}); REDIS_TLS_CA must be the CA that signed it, for the host name in REDIS_URL; see docs/redis.md`;
}

/**
 * For the web and worker entry points: warns when verification is off, and ends the process
 * (`exit`, code 1) on a certificate failure before the first ready connection, with the
 * variable to fix — ioredis would otherwise reconnect forever and the process look merely slow.
 */
export function guardRedisTls(
  redis: RedisClient,
  config: TlsConfig,
  log: Logger,
  exit: (message: string) => void,
): void {
  if (!usesTls(config)) return;
  if (!config.redisTlsRejectUnauthorized) {
    log.warn(
      'REDIS_TLS_REJECT_UNAUTHORIZED=false: the Redis server is not authenticated (any certificate is accepted); set REDIS_TLS_CA to verify it',
    );
  }
  const onError = (err: NodeJS.ErrnoException): void => {
    if (err.code === undefined || !CERTIFICATE_ERRORS.has(err.code)) return;
    stop();
    exit(certificateFailure(err.code, config));
  };
  const stop = (): void => {
    redis.off('error', onError);
    redis.off('ready', stop);
  };
  redis.on('error', onError);
  redis.once('ready', stop);
}

/** The entry points' `exit` for guardRedisTls: the message on stderr (synchronously), code 1. */
export function exitWith(message: string): void {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}
