// The adapter's definition schema lives with the other definition schemas (the lowest layer),
// so that validating a model never reaches up into the protocol code.
export * from '../../definition/modbus-schema.js'
