// Lint rules for the TypeScript sources, tests and the dashboard. Two type-aware rules run on the
// server, the client package and the tests: a promise nobody awaits or handles, and a promise where
// a plain value is expected (an async callback given to an event emitter). They need the types, so
// eslint builds the TypeScript programs of those files (the nearest tsconfig.json: the root one for
// src/, packages/client's, and test/tsconfig.json for the tests).
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/', 'packages/*/dist/', 'node_modules/', 'bench/out/', 'bench/peers/**/node_modules/', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        performance: 'readonly',
        fetch: 'readonly',
        AbortSignal: 'readonly',
        structuredClone: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        queueMicrotask: 'readonly',
      },
    },
    rules: {
      // Names, paths and Modbus strings are checked for control characters on purpose, by regex.
      'no-control-regex': 'off',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      'no-restricted-syntax': [
        'error',
        { selector: "ThrowStatement > NewExpression[callee.name='Error']", message: 'Throw a MimicError subclass (src/errors.ts), not a bare Error.' },
      ],
    },
  },
  {
    files: ['src/**/*.ts', 'packages/client/src/**/*.ts', 'test/**/*.ts'],
    ignores: ['**/*.d.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
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
  {
    // Tests and benchmarks may throw plain errors and use `any` to look into answers.
    files: ['test/**', 'bench/**', 'scripts/**', 'ui/**'],
    rules: { 'no-restricted-syntax': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
)
