// The TypeScript client is its own package, packages/client (npm `mimic-sim-client`); the server
// uses it and re-exports it as its `./client` entry (`mimic-sim/client`).
export * from 'mimic-sim-client'
