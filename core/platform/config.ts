// The one place that reads the environment. Every process parses it once at start and
// stops with exit code 1 and a message naming each bad variable (see exitOnConfigError).
// The variables themselves are declared in config/schema.ts.
import { parseConfig, type Env } from './config/parse.js';
import type { Config } from './config/schema.js';
import type { UrlPolicy } from './url-policy.js';

export type { Config } from './config/schema.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: Env): Config {
  const { config, problems } = parseConfig(env);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** The URL policy (core/platform/url-policy.ts) this configuration asks for. */
export function urlPolicyOf(config: Pick<Config, 'allowPrivateUrls'>): UrlPolicy {
  return { allowHttpAndLoopback: config.allowPrivateUrls };
}

/** Runs `read`; a ConfigError ends the process with exit code 1 and its message. */
export function exitOnConfigError<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

/** Entry points call this: a bad environment ends the process with exit code 1. */
export function loadConfigOrExit(env: Env = process.env): Config {
  return exitOnConfigError(() => loadConfig(env));
}
