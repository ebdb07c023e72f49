/**
 * Runs an API suite again with `--fast-lane off` (node:http and fastify serve every request),
 * inside one suite named for the setting. The suite's servers read the setting when they start
 * (test/helpers/server.ts `fastLaneSetting`); each test file runs in a process of its own, so
 * setting it here leaves the other files alone.
 *
 * Each file calls `describe` itself: node's test runner names a test's file after the place its
 * `describe` is called, and scripts/test-times.mjs keeps each file's length under that name (a
 * `describe` here made the ten files one entry, `lane-off.ts`, that ordered none of them).
 *
 * @example
 * describe(FAST_LANE_OFF, fastLaneOff(() => import('../api-tree.test.js')))
 */
export const FAST_LANE_OFF = 'with --fast-lane off'

export function fastLaneOff(load: () => Promise<unknown>): () => Promise<void> {
  process.env.MIMIC_FAST_LANE = 'off'
  return async () => {
    await load()
  }
}
