// test/reference-client-gaps.test.ts again, with the fast lane off (lane-off.ts).
import { withFastLaneOff } from './lane-off.js'

withFastLaneOff(() => import('../reference-client-gaps.test.js'))
