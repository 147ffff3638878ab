// eslint.config.js - the JavaScript lint of the dashboard (web/js) and its browser tests (tests/browser): eslint's
// recommended rules and a few habits. The layout tier runs it from the repository root:
//   web/node_modules/.bin/eslint -c web/eslint.config.js web/js tests/browser
import js from '@eslint/js';
import globals from 'globals';

export default [
  js.configs.recommended,
  {
    files: ['web/js/**/*.js'],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: { ...globals.browser, uPlot: 'readonly' }, // uPlot: vendor/uPlot.iife.min.js, a classic script
    },
  },
  {
    // Node's test runner drives Chromium; functions passed to page.evaluate run in the page.
    files: ['tests/browser/**/*.mjs'],
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: { ...globals.node, ...globals.browser } },
  },
  {
    rules: {
      'no-unused-vars': ['error', { args: 'after-used', argsIgnorePattern: '^_', caughtErrors: 'none' }],
      eqeqeq: ['error', 'smart'],
      'no-var': 'error',
      'prefer-const': ['error', { destructuring: 'all' }],
      'no-shadow': 'error',
    },
  },
];
