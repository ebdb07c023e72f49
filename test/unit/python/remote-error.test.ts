// A worker failure as a fault: its path is said once, before its message.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ValidationError } from '../../../src/errors.js'
import { remoteError } from '../../../src/python/remote-error.js'

describe('remoteError', () => {
  it('a message that already starts with its path does not get it a second time', () => {
    for (const message of [
      "actions[0].call: statistics.sys is the module 'sys', which actions may not use",
      "statistics.sys is the module 'sys', which actions may not use",
    ]) {
      const err = remoteError({ kind: 'load', message, path: 'actions[0].call' }, { instance: 's1', action: 'load' })
      assert.ok(err instanceof ValidationError)
      assert.equal(err.message, "Cannot load Python code of instance 's1': actions[0].call: statistics.sys is the module 'sys', which actions may not use")
      assert.deepEqual(err.details, [{ path: 'actions[0].call', message: "statistics.sys is the module 'sys', which actions may not use" }])
    }
  })

  it('a message that only mentions its path further on keeps it', () => {
    const err = remoteError(
      { kind: 'load', message: "class 'X' not found in a.py (import.a.py.class)", path: 'import.a.py.class' },
      { instance: 's1', action: 'load' },
    )
    assert.deepEqual(err.details, [{ path: 'import.a.py.class', message: "class 'X' not found in a.py (import.a.py.class)" }])
  })
})
