import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The layers (README: Architecture). Each folder names what it must not import; an import
// across a forbidden line fails `npm run lint`.
//   api, dashboard ─┐
//   workers ────────┼─→ core/domain ─→ core/wiring (Services) ─→ core/integrations ─→ core/platform
//                   └─→ jobs (queues, job table) ───────────────────────────────────→ core/platform
// scripts/ (the local harness, CLIs), test/ and bench/ stand outside: no process imports them.
const layer = (name, forbidden) => ({
  // Relative imports only: package names such as @bull-board/api are not layers.
  regex: `^\\.\\.?/(?:.*/)?(?:${forbidden.join('|')})(?:/|\\.js$)`,
  message: `${name} may not import this layer (README: Architecture, layers).`,
});
const restrict = (files, name, forbidden) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns: [layer(name, forbidden)] }] },
});
const OUTSIDE = ['scripts', 'test', 'bench'];
const PROCESSES = ['api', 'workers', 'dashboard', ...OUTSIDE];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.local/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Read configuration through core/platform/config.ts only.',
        },
      ],
    },
  },
  restrict(['core/platform/**'], 'core/platform', ['domain', 'integrations', 'wiring', 'jobs', ...PROCESSES]),
  restrict(['core/integrations/**'], 'core/integrations', ['domain', 'wiring', 'jobs', ...PROCESSES]),
  restrict(['jobs/**'], 'jobs', ['domain', 'integrations', 'wiring', ...PROCESSES]),
  restrict(['core/wiring/**'], 'core/wiring', ['domain', ...PROCESSES]),
  restrict(['core/domain/**'], 'core/domain', PROCESSES),
  restrict(['dashboard/**'], 'dashboard', ['api', 'workers', ...OUTSIDE]),
  restrict(['api/**'], 'api', ['workers', ...OUTSIDE]),
  restrict(['workers/**'], 'workers', ['api', 'dashboard', ...OUTSIDE]),
  {
    // Two upserts of one new _id at once fail one of them on FerretDB: core/platform/db/upsert.ts.
    files: ['core/**', 'api/**', 'workers/**', 'jobs/**', 'dashboard/**', 'scripts/**'],
    ignores: ['core/platform/db/upsert.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "Property[key.name='upsert'][value.value=true]",
          message: 'Upsert through replaceById / updateById (core/platform/db/upsert.ts).',
        },
      ],
    },
  },
  {
    files: ['core/platform/config.ts', 'scripts/**', 'test/**', 'bench/**', '**/*.mjs'],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    // Tests read loosely-typed JSON responses.
    files: ['test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  {
    // The chat widget and its test page run in the browser, as classic scripts.
    files: ['dashboard/widget/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: {
        window: 'readonly',
        document: 'readonly',
        navigator: 'readonly',
        fetch: 'readonly',
        URL: 'readonly',
        URLSearchParams: 'readonly',
      },
    },
  },
);
