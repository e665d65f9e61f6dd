// The configuration table of docs/configuration.md, generated from the schema
// (core/platform/config/schema.ts). `npm run docs:config` writes it between the markers;
// test/foundation/config-table.test.ts fails when the document's copy differs from what the schema gives.
import { format, resolveConfig } from 'prettier';
import { DECLARED, isOptional } from '../../core/platform/config/parse.js';
import type { LocalRuns, Variable } from '../../core/platform/config/variables.js';

/** The document holding the table, from the repository's root. */
export const CONFIG_DOC = 'docs/configuration.md';
export const BEGIN = '<!-- config-table:begin -->';
export const END = '<!-- config-table:end -->';
const NOTE =
  '<!-- Generated from core/platform/config/schema.ts by `npm run docs:config`: edit the schema. -->';

/** A default as its variable is spelled: daily hours {start, end} as `HH:MM-HH:MM`. */
const spelled = (value: unknown): string =>
  typeof value === 'object' && value !== null && 'start' in value && 'end' in value
    ? `${String(value.start)}-${String(value.end)}`
    : String(value);
const code = (value: unknown): string => `\`${spelled(value)}\``;
const cell = (markdown: string): string => markdown.replace(/\|/g, '\\|');

function localRuns({ start, test }: LocalRuns): string {
  if (start !== undefined && start === test) return ` (\`npm start\`/\`npm test\`: ${start})`;
  const parts = [
    ...(start === undefined ? [] : [`\`npm start\`: ${start}`]),
    ...(test === undefined ? [] : [`\`npm test\`: ${test}`]),
  ];
  return parts.length === 0 ? '' : ` (${parts.join('; ')})`;
}

function defaultOf(optional: boolean, schemaDefault: unknown, variable: Variable): string {
  const { fallback, requiredWhen, requiredWith } = variable;
  const base =
    schemaDefault !== undefined
      ? code(schemaDefault)
      : fallback !== undefined
        ? fallback.text
        : optional
          ? 'none'
          : 'required';
  const when =
    requiredWhen === undefined
      ? ''
      : `; required when ${code(`${requiredWhen.name}=${requiredWhen.equals}`)}`;
  const withOther = requiredWith === undefined ? '' : `; required when ${code(requiredWith)} is set`;
  return base + when + withOther + localRuns(variable.local ?? {});
}

function typeOf(variable: Variable): string {
  const words = variable.expects.replace(/^an? /, '');
  return variable.differsFrom === undefined ? words : `${words}, not ${code(variable.differsFrom)}`;
}

/** The table in Markdown, as prettier lays it out (so `npm run lint` and the test agree). */
export async function configTable(markdownPath: string): Promise<string> {
  const rows = DECLARED.map(({ schema, variable }) =>
    [
      code(variable.name),
      typeOf(variable),
      defaultOf(isOptional(schema), schema.default, variable),
      variable.description,
    ]
      .map(cell)
      .join(' | '),
  );
  const markdown = ['variable | type | default | meaning', '--- | --- | --- | ---', ...rows]
    .map((row) => `| ${row} |`)
    .join('\n');
  const options = (await resolveConfig(markdownPath)) ?? {};
  return format(markdown, { ...options, parser: 'markdown' });
}

/** What lies between the markers of a Markdown document (undefined when they are missing). */
export function between(markdown: string): string | undefined {
  const start = markdown.indexOf(BEGIN);
  const end = markdown.indexOf(END);
  if (start === -1 || end < start) return undefined;
  return markdown.slice(start + BEGIN.length, end);
}

/** The document with `table` between its markers. */
export function withTable(markdown: string, table: string): string {
  const inner = between(markdown);
  if (inner === undefined) throw new Error(`${CONFIG_DOC} lacks the markers ${BEGIN} and ${END}`);
  const start = markdown.indexOf(BEGIN) + BEGIN.length;
  return `${markdown.slice(0, start)}\n${NOTE}\n\n${table}\n${markdown.slice(start + inner.length)}`;
}
