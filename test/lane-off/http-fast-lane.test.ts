// test/http-fast-lane.test.ts again, with the fast lane off (lane-off.ts).
import { withFastLaneOff } from './lane-off.js'

withFastLaneOff(() => import('../http-fast-lane.test.js'))
