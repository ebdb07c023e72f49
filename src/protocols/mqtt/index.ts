/**
 * MQTT for Mimic: the `mqtt` adapter (a client of a broker per instance), its payload rules and
 * the embedded brokers (`broker: embedded`).
 *
 * @example
 * import { mqttKind } from './protocols/mqtt/index.js'
 */
export { MqttAdapter, checkPublishedValue } from './adapter.js'
export type { MqttAdapterOptions, MqttConnection } from './adapter.js'
export { EmbeddedBrokers } from './embedded-brokers.js'
export type { BrokerLease } from './embedded-brokers.js'
export { BrokerGuard, DEFAULT_BROKER_LIMITS } from './broker-guard.js'
export type { AdapterRegistration, AdapterSeat, BrokerLimits, BrokerStats } from './broker-guard.js'
export { parseMqttUsers, readMqttUsers } from './users-file.js'
export type { MqttUsers } from './users-file.js'
export { PayloadReader, fitJson, fitText, formatPayload, rawText, topicMatches } from './payload.js'
export type { ReadResult, TemplateFields } from './payload.js'
export { mqttKind } from './kind.js'
export * from '../../definition/mqtt-schema.js'
