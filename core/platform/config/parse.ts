// Reads an environment against CONFIG_SCHEMA: each variable is read by its kind, defaulted, then
// TypeBox checks the bounds the schema declares, then the cross-variable rules the declarations
// carry. Every problem is collected (one per variable) so a bad start names them all at once.
import { OptionalKind, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { CONFIG_SCHEMA, type Config } from './schema.js';
import { variableOf, type Variable } from './variables.js';

export type Env = Record<string, string | undefined>;

/** Each Config property with its schema and variable, in declaration order. */
export const DECLARED: { key: string; schema: TSchema; variable: Variable }[] = Object.entries(
  CONFIG_SCHEMA.properties,
).map(([key, schema]) => ({ key, schema, variable: variableOf(schema) }));

export const isOptional = (schema: TSchema): boolean => schema[OptionalKind] === 'Optional';

/** `got`: what may be echoed of the value (undefined: nothing). */
function invalid(variable: Variable, got: string | undefined): string {
  const shown = got === undefined ? '' : ` (got "${got}")`;
  return `${variable.name} must be ${variable.expects}${shown}`;
}

/** The Config an environment describes, or the problems that stop it (each naming its variable). */
export function parseConfig(env: Env): { config: Config; problems: string[] } {
  // Blank counts as unset: a `KEY=` line in a .env file means "not given".
  const raw = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const config: Record<string, unknown> = {};
  const problem = new Map<string, string>();
  const fellBack = new Set<string>();

  for (const { key, schema, variable } of DECLARED) {
    const given = raw(variable.name);
    if (given !== undefined) {
      const read = variable.read(given);
      if (read.ok) config[key] = read.value;
      else problem.set(key, invalid(variable, read.got));
    } else if (schema.default !== undefined) {
      config[key] = schema.default;
    } else if (variable.fallback !== undefined) {
      config[key] = variable.fallback.value(raw, config);
      fellBack.add(key);
    } else if (!isOptional(schema)) {
      problem.set(key, `${variable.name} is missing: ${variable.description}`);
    }
  }

  for (const error of Value.Errors(CONFIG_SCHEMA, config)) {
    const key = error.path.split('/')[1] ?? '';
    const declared = DECLARED.find((d) => d.key === key);
    if (declared === undefined || problem.has(key)) continue;
    const value = config[key];
    const shown = Array.isArray(value) ? value.join(',') : String(value);
    const message = invalid(declared.variable, declared.variable.secret ? undefined : shown.slice(0, 100));
    const source = fellBack.has(key) ? `; unset, it is ${declared.variable.fallback?.text}` : '';
    problem.set(key, message + source);
  }

  const valueOf = (name: string): unknown =>
    config[DECLARED.find((d) => d.variable.name === name)?.key ?? ''];
  for (const { key, variable } of DECLARED) {
    if (problem.has(key)) continue;
    const { requiredWhen, requiredWith, differsFrom } = variable;
    if (requiredWith !== undefined && config[key] === undefined && valueOf(requiredWith) !== undefined) {
      problem.set(key, `${variable.name} is missing: it is required when ${requiredWith} is set`);
    }
    if (
      requiredWhen !== undefined &&
      config[key] === undefined &&
      valueOf(requiredWhen.name) === requiredWhen.equals
    ) {
      problem.set(
        key,
        `${variable.name} is missing: it is required when ${requiredWhen.name}=${requiredWhen.equals}`,
      );
    }
    if (differsFrom !== undefined && config[key] !== undefined && config[key] === valueOf(differsFrom)) {
      problem.set(key, `${variable.name} must differ from ${differsFrom}`);
    }
  }

  const problems = DECLARED.flatMap(({ key }) => problem.get(key) ?? []);
  return { config: config as Config, problems };
}
