// The type-aware rules, run with the type-checks (`npm run lint:types`, part of `npm run check`):
// a promise nobody awaits or handles, and a promise where a plain value is expected (an async
// callback given to an event emitter), on the server, the client package and the tests. eslint
// builds the TypeScript programs of those files (the nearest tsconfig.json: the root one for src/,
// packages/client's, and test/tsconfig.json for the tests), which is why they are not in the quick
// `npm run lint` (eslint.config.js).
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/', 'packages/*/dist/', 'node_modules/', 'bench/', 'ui/', 'scripts/', 'examples/', '**/*.d.ts'] },
  {
    files: ['src/**/*.ts', 'packages/client/src/**/*.ts', 'test/**/*.ts'],
    ignores: ['**/*.d.ts'],
    languageOptions: { parser: tseslint.parser, parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'off' },
    rules: {
      // node:test's describe/it/test return promises the runner itself waits on; a subtest
      // started from a test's context (t.test) is still to be awaited.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
)
