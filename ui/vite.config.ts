import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

// Build: `vite build --config ui/vite.config.ts` (from the package root) writes dist/ui, which the
// server serves at /ui. Dev: `vite --config ui/vite.config.ts` proxies the API to a running server.
const root = fileURLToPath(new URL('.', import.meta.url))

export default defineConfig({
  root,
  base: '/ui/',
  publicDir: false,
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    chunkSizeWarningLimit: 400,
  },
  server: {
    proxy: {
      '/api': process.env.MIMIC_URL ?? 'http://127.0.0.1:8000',
    },
  },
})
