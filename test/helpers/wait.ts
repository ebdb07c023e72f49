/**
 * Waits until `check` returns a truthy value, asking every `stepMs`, and resolves with it; rejects
 * once `timeoutMs` have passed without one.
 *
 * @example
 * await eventually(async () => (await t.api('GET', node)).body.connection === 'connected')
 */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 5000, stepMs = 25): Promise<Truthy<T>> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value as Truthy<T>
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, stepMs))
  }
}

/** What a truthy value of type T can be. */
type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>
