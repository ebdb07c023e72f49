import { describe } from 'node:test'

/**
 * Runs an API suite again with `--fast-lane off` (node:http and fastify serve every request),
 * inside one suite named for the setting. The suite's servers read the setting when they start
 * (test/helpers/server.ts `fastLaneSetting`); each test file runs in a process of its own, so
 * setting it here leaves the other files alone.
 *
 * @example
 * withFastLaneOff(() => import('../api-tree.test.js'))
 */
export function withFastLaneOff(load: () => Promise<unknown>): void {
  process.env.MIMIC_FAST_LANE = 'off'
  describe('with --fast-lane off', async () => {
    await load()
  })
}
