// The `retell` target of `npm run providers:derive`: Retell publishes its API through retell-sdk,
// whose .d.ts types are generated from Retell's own OpenAPI document, so test/fakes/spec/retell.json
// is made from those types (ts-json-schema-generator over scripts/providers/retell-shapes.ts) and
// laid out as an OpenAPI document, so that test/fakes/spec/openapi-spec.ts judges the Retell fake
// as it judges the others. `x-derived-from` names the package, its version and the sha256 of
// every .d.ts file the shapes come from: a new SDK is a new document.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createGenerator } from 'ts-json-schema-generator';
import ts from 'typescript';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** The types of retell-shapes.ts the document holds, by the name it gives them. */
const ROOTS = [
  'CreatePhoneCallBody',
  'CreatePhoneCallAnswer',
  'ListCallsBody',
  'ListCallsAnswer',
  'GetCallAnswer',
  'ListVoicesAnswer',
  'RetellError',
  'CallWebhook',
  'TransferWebhook',
  'ChatWebhook',
  'CustomFunctionRequest',
  'CustomFunctionArgsOnly',
] as const;

/**
 * The SDK's declaration text with each interface declared more than once in one scope merged
 * into its first declaration, as TypeScript merges them (retell-sdk declares, e.g.,
 * `CallListParams.FilterCriteria.StringFilter` twice: the second adds `key`). The generator
 * reads only the first declaration of a name; without this a metadata filter our client sends,
 * valid for the compiler, would be off the derived document.
 */
export function mergeInterfaces(fileName: string, text: string): string {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const edits: Array<{ at: number; end: number; text: string }> = [];
  const visitScope = (statements: readonly ts.Statement[]): void => {
    const byName = new Map<string, ts.InterfaceDeclaration[]>();
    for (const statement of statements) {
      if (ts.isInterfaceDeclaration(statement)) {
        const list = byName.get(statement.name.text) ?? [];
        list.push(statement);
        byName.set(statement.name.text, list);
      } else if (ts.isModuleDeclaration(statement) && statement.body && ts.isModuleBlock(statement.body)) {
        visitScope(statement.body.statements);
      }
    }
    for (const [, declarations] of byName) {
      if (declarations.length < 2) continue;
      const [first, ...rest] = declarations as [ts.InterfaceDeclaration, ...ts.InterfaceDeclaration[]];
      const names = new Set(first.members.map((m) => m.name?.getText(source)));
      const added: string[] = [];
      for (const later of rest) {
        for (const member of later.members) {
          const name = member.name?.getText(source);
          if (names.has(name)) continue;
          names.add(name);
          added.push(member.getText(source));
        }
        edits.push({ at: later.getFullStart(), end: later.getEnd(), text: '' });
      }
      const close = first.getEnd() - 1;
      edits.push({ at: close, end: close, text: added.map((m) => `${m}\n`).join('') });
    }
  };
  visitScope(source.statements);
  let out = text;
  for (const edit of edits.sort((a, b) => b.at - a.at)) {
    out = out.slice(0, edit.at) + edit.text + out.slice(edit.end);
  }
  return out;
}

/** A program over the shapes whose retell-sdk files are read merged; `read` lists those files. */
function shapesProgram(root: string, entry: string, read: Map<string, string>): ts.Program {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  )!;
  const options = { ...config.options, noEmit: true };
  const host = ts.createCompilerHost(options);
  const sdkDir = join(root, 'node_modules', 'retell-sdk') + '/';
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    if (!fileName.startsWith(sdkDir)) return getSourceFile(fileName, languageVersion, onError, shouldCreate);
    const text = readFileSync(fileName, 'utf8');
    read.set(relative(sdkDir, fileName), createHash('sha256').update(text).digest('hex'));
    return ts.createSourceFile(fileName, mergeInterfaces(fileName, text), languageVersion, true);
  };
  return ts.createProgram({ rootNames: [entry], options, host });
}

const ERRORS = ['400', '401', '402', '422', '429', '500'];

const schema = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` });
const json = (name: string): JsonObject => ({ content: { 'application/json': { schema: schema(name) } } });

function operation(operationId: string, ok: [string, string], body?: string, required = true): JsonObject {
  const responses: JsonObject = { [ok[0]]: json(ok[1]) };
  for (const status of ERRORS) responses[status] = json('RetellError');
  return {
    operationId,
    ...(body === undefined ? {} : { requestBody: { required, ...json(body) } }),
    responses,
  };
}

/** A definition's name made safe for a JSON pointer and a component name. */
const safeName = (name: string): string => decodeURIComponent(name).replace(/[^A-Za-z0-9._-]/g, '_');

function rewriteRefs(node: Json): Json {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node === null || typeof node !== 'object') return node;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    out[key] =
      key === '$ref' && typeof value === 'string' && value.startsWith('#/definitions/')
        ? `#/components/schemas/${safeName(value.slice('#/definitions/'.length))}`
        : rewriteRefs(value);
  }
  return out;
}

export function deriveRetell(root: string): JsonObject {
  const version = (dir: string) =>
    (JSON.parse(readFileSync(join(root, 'node_modules', dir, 'package.json'), 'utf8')) as { version: string })
      .version;
  const sdk = { version: version('retell-sdk') };
  const generatorPackage = { version: version('ts-json-schema-generator') };
  const entry = join(root, 'scripts', 'providers', 'retell-shapes.ts');
  const read = new Map<string, string>();
  const generator = createGenerator({
    path: entry,
    tsProgram: shapesProgram(root, entry, read),
    expose: 'export',
    topRef: true,
    jsDoc: 'none',
    skipTypeCheck: true,
  });
  const schemas: JsonObject = {};
  for (const name of ROOTS) {
    const generated = generator.createSchema(name) as unknown as { definitions: JsonObject };
    for (const [key, value] of Object.entries(generated.definitions)) {
      schemas[safeName(key)] = rewriteRefs(value);
    }
  }
  const sorted: JsonObject = {};
  for (const key of Object.keys(schemas).sort()) sorted[key] = schemas[key]!;
  return {
    openapi: '3.1.0',
    info: { title: 'Retell API, as retell-sdk declares it', version: sdk.version },
    servers: [{ url: 'https://api.retellai.com' }],
    'x-derived-from': {
      package: 'retell-sdk',
      version: sdk.version,
      generator: `ts-json-schema-generator ${generatorPackage.version}`,
      shapes: relative(root, entry),
      sha256: Object.fromEntries([...read].sort(([a], [b]) => a.localeCompare(b))),
    },
    security: [{ bearer: [] }],
    paths: {
      '/v2/create-phone-call': {
        post: operation('createPhoneCall', ['201', 'CreatePhoneCallAnswer'], 'CreatePhoneCallBody'),
      },
      '/v3/list-calls': {
        post: operation('listCalls', ['200', 'ListCallsAnswer'], 'ListCallsBody', false),
      },
      '/v2/get-call/{call_id}': {
        get: {
          ...operation('getCall', ['200', 'GetCallAnswer']),
          parameters: [{ name: 'call_id', in: 'path', required: true, schema: { type: 'string' } }],
        },
      },
      '/list-voices': { get: operation('listVoices', ['200', 'ListVoicesAnswer']) },
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: sorted,
    },
  };
}
