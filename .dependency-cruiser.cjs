// Layer rules of src/ (see docs/architecture.md): imports point one way,
//   server -> system (tree nodes) -> engine -> language, python, protocols, snapshots -> definition, tree
// with errors.ts and version.ts below everything, and the client on its own (packages/client, which
// src/client re-exports by its package name). The entry points
// (cli.ts, mimic.ts, config.ts, index.ts) wire the layers together and may import any of them.
const layer = (folders) => `^src/(${folders.join('|')})/`

module.exports = {
  forbidden: [
    {
      name: 'no-cycles-between-folders',
      severity: 'error',
      comment: 'An import cycle may only run inside one folder (the tree nodes know their parents and children).',
      from: { path: '^src/([^/]+)/' },
      to: { circular: true, viaSomeNot: '^src/$1/' },
    },
    {
      name: 'server-is-the-top',
      severity: 'error',
      comment: 'Only the entry points know HTTP.',
      from: { path: '^src/', pathNot: ['^src/server/', '^src/(cli|mimic|index)\\.ts$'] },
      to: { path: '^src/server/' },
    },
    {
      name: 'system-below-server',
      severity: 'error',
      from: { path: layer(['engine', 'language', 'python', 'protocols', 'snapshots', 'definition', 'tree']) },
      to: { path: '^src/system/' },
    },
    {
      name: 'engine-below-system',
      severity: 'error',
      from: { path: layer(['language', 'python', 'protocols', 'snapshots', 'definition', 'tree']) },
      to: { path: '^src/engine/' },
    },
    {
      name: 'services-below-engine',
      severity: 'error',
      comment: 'language, python, protocols and snapshots are independent of each other and of the layers above.',
      from: { path: layer(['definition', 'tree']) },
      to: { path: layer(['language', 'python', 'protocols', 'snapshots']) },
    },
    { name: 'python-alone', severity: 'error', from: { path: '^src/python/' }, to: { path: layer(['language', 'protocols', 'snapshots']) } },
    { name: 'snapshots-alone', severity: 'error', from: { path: '^src/snapshots/' }, to: { path: layer(['language', 'protocols', 'python']) } },
    { name: 'language-alone', severity: 'error', from: { path: '^src/language/' }, to: { path: layer(['protocols', 'python', 'snapshots']) } },
    {
      name: 'protocols-alone',
      severity: 'error',
      comment:
        'Each protocol folder stands alone; only src/protocols/index.ts (the registry) names them all. src/protocols/serial/ is no protocol: it opens serial lines for those that use one. The Modbus wire codec (codec, encoding, rtu, schema) is shared by the Modbus server and master.',
      from: { path: '^src/protocols/([^/]+)/' },
      to: {
        path: ['^src/protocols/', layer(['language', 'python', 'snapshots'])],
        pathNot: ['^src/protocols/$1/', '^src/protocols/[^/]+\\.ts$', '^src/protocols/serial/', '^src/protocols/modbus/(codec|encoding|rtu|schema)\\.ts$'],
      },
    },
    {
      name: 'protocol-code-loaded-lazily',
      severity: 'error',
      comment:
        "A protocol's code (and its library: node-opcua alone is 1.6 s of CPU) loads only when a definition names the kind (src/protocols/lazy-kind.ts): outside its folder only its kind.ts is imported, and kind.ts imports the rest of the folder dynamically or for types. The MCP server's Modbus client uses the wire codec, which needs no library.",
      from: { path: '^src/', pathNot: '^src/protocols/[^/]+/(?!kind\\.ts$)' },
      to: {
        path: '^src/protocols/[^/]+/',
        pathNot: ['^src/protocols/[^/]+/kind\\.ts$', '^src/protocols/mqtt/users-file\\.ts$', '^src/protocols/modbus/(codec|encoding|schema)\\.ts$'],
        dependencyTypesNot: ['dynamic-import', 'type-only', 'type-import'],
      },
    },
    {
      name: 'definition-and-tree-at-the-bottom',
      severity: 'error',
      from: { path: '^src/(definition|tree)/' },
      to: { path: '^src/(cli|mimic|config|index)\\.ts$' },
    },
    { name: 'nothing-imports-the-cli', severity: 'error', from: { path: '^src/', pathNot: '^src/index\\.ts$' }, to: { path: '^src/cli\\.ts$' } },
    {
      name: 'client-stands-alone',
      severity: 'error',
      comment: 'src/client/ only re-exports the client package (mimic-sim-client): it imports nothing from the server side.',
      from: { path: '^src/client/' },
      to: { path: '^src/', pathNot: '^src/client/' },
    },
    {
      name: 'client-package-stands-alone',
      severity: 'error',
      comment:
        'The client package (packages/client, npm mimic-sim-client) ships to users on its own: it imports nothing but its own files and yaml, no server code and no Node built-in.',
      from: { path: '^packages/client/src/' },
      to: { pathNot: ['^packages/client/src/', '^node_modules/yaml/'] },
    },
    {
      name: 'server-uses-the-client-package',
      severity: 'error',
      comment: 'The server reaches the client by its package name (mimic-sim-client), never by a path into packages/.',
      from: { path: '^src/' },
      to: { path: '^packages/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
}
