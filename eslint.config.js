// Lint rules for the TypeScript sources, tests and the dashboard (`npm run lint`). The two
// type-aware rules (a promise nobody awaits, a promise where a plain value is expected) need the
// TypeScript programs built, which takes most of a minute: they are in eslint.types.config.js and
// run with the type-checks (`npm run lint:types`, part of `npm run check`).
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
        {
          // Node 20's V8 does not inline a private getter or setter: a timer's `get #now()` made
          // a batch of Python-backed steps take twice the main thread's time (bench/ANALYSIS.md).
          selector: "MethodDefinition[kind=/^(get|set)$/][key.type='PrivateIdentifier']",
          message: 'Use a private method (#now()) or a public accessor, not a private getter or setter: V8 does not inline those.',
        },
      ],
    },
  },
  {
    // Tests and benchmarks may throw plain errors and use `any` to look into answers.
    files: ['test/**', 'bench/**', 'scripts/**', 'ui/**'],
    rules: { 'no-restricted-syntax': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // `npm test` runs most test files several to a process (scripts/run-tests.mjs): a hook outside
    // a describe block would run around the other files' tests too.
    files: ['test/**/*.test.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'Program > ExpressionStatement > CallExpression[callee.name=/^(before|after|beforeEach|afterEach)$/]',
          message: 'Put the hook inside a describe block: test files share processes (scripts/run-tests.mjs).',
        },
      ],
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
)
