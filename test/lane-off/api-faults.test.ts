// test/api-faults.test.ts again, with the fast lane off (lane-off.ts).
import { describe } from 'node:test'
import { FAST_LANE_OFF, fastLaneOff } from './lane-off.js'

describe(
  FAST_LANE_OFF,
  fastLaneOff(() => import('../api-faults.test.js')),
)
