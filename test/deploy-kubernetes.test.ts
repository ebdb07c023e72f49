// deploy/kubernetes, rendered by Debian's kubectl (its built-in kustomize) and checked offline against
// the Kubernetes API schemas that kubernetes-models carries: no cluster is involved.
import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { parseAllDocuments } from 'yaml'

const ROOT = new URL('..', import.meta.url).pathname
const DIR = join(ROOT, 'deploy/kubernetes')
const BIN = join(ROOT, 'bin/mimic.js')

const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' })
const missing = kubectl.error !== undefined || kubectl.status !== 0
if (missing && process.env.CI) throw new Error("kubectl is missing: install Debian's kubectl (.ci/run does) to render deploy/kubernetes")

type Obj = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; [key: string]: unknown }
type Container = {
  name: string
  command: string[]
  env: { name: string; value?: string }[]
  volumeMounts: { name: string; mountPath: string; subPath?: string }[]
}

function run(command: string, args: string[], options: { env?: Record<string, string> } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, env: { ...process.env, ...options.env }, timeout: 60_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr })
    })
  })
}

/** The model class of kubernetes-models for an object: `apps/v1` + `StatefulSet` is kubernetes-models/apps/v1/StatefulSet. */
async function modelOf(obj: Obj): Promise<new (data: unknown) => { validate(): void }> {
  const mod = (await import(`kubernetes-models/${obj.apiVersion}/${obj.kind}`)) as Record<string, new (data: unknown) => { validate(): void }>
  const model = mod[obj.kind]
  assert.ok(model, `kubernetes-models has no ${obj.apiVersion} ${obj.kind}`)
  return model
}

/**
 * Validates an object against its schema, and reports the fields the schema does not know.
 *
 * The schemas of the Kubernetes API allow unknown fields, so a validator alone passes a typo
 * (`replica: 3`, `readinessprobe:`) that the API server would drop or refuse (kubectl's
 * --validate=strict). kubernetes-models ships its schemas as compiled validators, with no schema
 * documents to walk, so this watches the validator instead: each object is wrapped in a Proxy that
 * records which properties the validator reads. A property it never read is not in the schema; a
 * map the validator enumerates (labels, a ConfigMap's data) has free keys and counts as read.
 */
async function validate(obj: Obj): Promise<string[]> {
  const model = await modelOf(obj)
  const unread = new Map<object, { path: string; read: Set<PropertyKey>; enumerated: boolean }>()
  const wrap = (value: unknown, path: string): unknown => {
    if (value === null || typeof value !== 'object') return value
    const record = { path, read: new Set<PropertyKey>(), enumerated: false }
    unread.set(value, record)
    const children = new Map<PropertyKey, unknown>()
    return new Proxy(value, {
      get(target, key, receiver) {
        record.read.add(key)
        const inner: unknown = Reflect.get(target, key, receiver)
        if (typeof key !== 'string' || inner === null || typeof inner !== 'object') return inner
        if (!children.has(key)) children.set(key, wrap(inner, `${path}.${key}`))
        return children.get(key)
      },
      ownKeys(target) {
        record.enumerated = true
        return Reflect.ownKeys(target)
      },
    })
  }
  // The model copies the data it is given; validate() then runs on the copy: wrap the copy.
  const instance = new model(structuredClone(obj)) as unknown as Record<string, unknown>
  const wrapped = wrap({ ...instance }, obj.kind) as Record<string, unknown>
  const { validate: check } = Object.getPrototypeOf(instance) as { validate: (this: unknown) => void }
  check.call(wrapped)
  const unknown: string[] = []
  for (const [value, record] of unread) {
    if (record.enumerated || Array.isArray(value)) continue
    for (const key of Object.keys(value)) if (!record.read.has(key)) unknown.push(`${record.path}.${key}`)
  }
  return unknown
}

void describe(
  'deploy/kubernetes renders with kustomize and matches the Kubernetes schemas (offline)',
  { skip: missing ? 'kubectl is not installed' : false },
  () => {
    let objects: Obj[]
    let work: string
    before(async () => {
      const res = await run('kubectl', ['kustomize', DIR])
      assert.equal(res.code, 0, res.stderr)
      objects = parseAllDocuments(res.stdout).map((doc) => doc.toJS() as Obj)
      work = await mkdtemp(join(tmpdir(), 'mimic-kube-'))
    })
    after(async () => rm(work, { recursive: true, force: true }))

    const byKind = (kind: string): Obj => {
      const found = objects.filter((o) => o.kind === kind)
      assert.equal(found.length, 1, `one ${kind} in the rendered files`)
      return found[0]!
    }
    const container = (): Container => {
      const spec = byKind('StatefulSet').spec as { template: { spec: { containers: Container[] } } }
      return spec.template.spec.containers[0]!
    }

    void it('renders a ConfigMap, a Service and a StatefulSet, each valid against its schema with no unknown field', async () => {
      assert.deepEqual(objects.map((o) => o.kind).sort(), ['ConfigMap', 'Service', 'StatefulSet'])
      for (const obj of objects) {
        const model = await modelOf(obj)
        assert.doesNotThrow(() => new model(obj).validate(), `${obj.kind} ${obj.metadata.name}`)
        assert.deepEqual(await validate(obj), [], `${obj.kind} ${obj.metadata.name}: fields the schema does not know`)
      }
    })

    void it('the check refuses a wrong type, a missing required field and an unknown field', async () => {
      const set = structuredClone(byKind('StatefulSet')) as Obj & { spec: Record<string, unknown> }
      const model = await modelOf(set)
      assert.throws(() => new model({ ...set, spec: { ...set.spec, replicas: 'three' } }).validate(), /replicas must be integer/)
      const noSelector = { ...set.spec }
      delete noSelector.selector
      assert.throws(() => new model({ ...set, spec: noSelector }).validate(), /selector/)
      assert.deepEqual(await validate({ ...set, spec: { ...set.spec, replica: 3 } }), ['StatefulSet.spec.replica'])
      const typo = structuredClone(set) as Obj & { spec: { template: { spec: { containers: Record<string, unknown>[] } } } }
      typo.spec.template.spec.containers[0]!.readinessprobe = {}
      assert.deepEqual(await validate(typo), ['StatefulSet.spec.template.spec.containers.0.readinessprobe'])
    })

    void it("the Service is headless and selects the StatefulSet's pods; the StatefulSet names it", () => {
      const service = byKind('Service') as Obj & { spec: { clusterIP: string; selector: Record<string, string>; ports: { port: number }[] } }
      const set = byKind('StatefulSet') as Obj & { spec: { serviceName: string; template: { metadata: { labels: Record<string, string> } } } }
      assert.equal(service.spec.clusterIP, 'None')
      assert.equal(set.spec.serviceName, service.metadata.name)
      for (const [k, v] of Object.entries(service.spec.selector)) assert.equal(set.spec.template.metadata.labels[k], v, `pod label ${k}`)
      assert.deepEqual(
        service.spec.ports.map((p) => p.port),
        [8000],
      )
    })

    void it("MIMIC_SHARD_COUNT equals replicas, and the system file is the ConfigMap's, the same as examples/fleet/system.yaml", async () => {
      const set = byKind('StatefulSet') as Obj & {
        spec: { replicas: number; template: { spec: { volumes: { name: string; configMap?: { name: string } }[] } } }
      }
      const env = Object.fromEntries(container().env.map((e) => [e.name, e.value]))
      assert.equal(env.MIMIC_SHARD_COUNT, String(set.spec.replicas))
      const configMap = byKind('ConfigMap') as Obj & { data: Record<string, string> }
      const mount = container().volumeMounts.find((m) => m.mountPath === env.MIMIC_SYSTEM)
      assert.ok(mount, `a mount at ${env.MIMIC_SYSTEM}`)
      const volume = set.spec.template.spec.volumes.find((v) => v.name === mount.name)
      assert.equal(volume?.configMap?.name, configMap.metadata.name)
      const text = configMap.data[mount.subPath ?? '']
      assert.equal(text, await readFile(join(ROOT, 'examples/fleet/system.yaml'), 'utf8'))
      // The fleet it makes: mimic validate reads the file as a server would.
      await writeFile(join(work, 'system.yaml'), text)
      const res = await run(process.execPath, [BIN, 'validate', join(work, 'system.yaml')])
      assert.equal(res.code, 0, res.stdout + res.stderr)
    })

    void it('each pod runs mimic serve as the shard its ordinal gives: mimic-0 is 1/3, mimic-2 is 3/3', async () => {
      const { command, env } = container()
      // Kubernetes turns $$ into $ (and would expand $(VAR), of which the command has none).
      assert.doesNotMatch(command.join(' '), /(^|[^$])\$\([A-Za-z_]/)
      const args = command.map((a) => a.replaceAll('$$', '$'))
      // A stand-in for mimic on PATH that prints what it was started with.
      await writeFile(join(work, 'mimic'), '#!/bin/sh\necho "$* $MIMIC_SHARD"\n')
      await chmod(join(work, 'mimic'), 0o755)
      const vars = Object.fromEntries(env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value as string]))
      const seen: string[] = []
      for (const pod of ['mimic-0', 'mimic-1', 'mimic-2']) {
        const res = await run(args[0]!, args.slice(1), { env: { ...vars, HOSTNAME: pod, PATH: `${work}:${process.env.PATH ?? ''}` } })
        assert.equal(res.code, 0, res.stderr)
        seen.push(res.stdout.trim())
      }
      assert.deepEqual(seen, ['serve 1/3', 'serve 2/3', 'serve 3/3'])
    })

    void it('deploy/kubernetes/system.yaml is a copy of examples/fleet/system.yaml', async () => {
      assert.equal(await readFile(join(DIR, 'system.yaml'), 'utf8'), await readFile(join(ROOT, 'examples/fleet/system.yaml'), 'utf8'))
    })
  },
)
