// test/float-json.test.ts again, with the fast lane off (lane-off.ts).
import { withFastLaneOff } from './lane-off.js'

withFastLaneOff(() => import('../float-json.test.js'))
