import type { ProtocolKind } from '../adapter.js'
import { mqttSchema, type MqttDefinition } from '../../definition/mqtt-schema.js'
import { MqttAdapter, checkPublishedValue } from './adapter.js'
import { EmbeddedBrokers } from './embedded-brokers.js'
import { readMqttUsers } from './users-file.js'

/**
 * The `mqtt` protocol kind: an MQTT client per instance; the embedded brokers are the shared context.
 *
 * @example
 * const brokers = mqttKind.createContext({ logger, security: { productKey: 'k' } })
 * const adapter = mqttKind.create({ settings, accessor, logger, name: 'boiler.mqtt', instance: 'boiler', context: brokers })
 */
export const mqttKind: ProtocolKind<MqttDefinition, EmbeddedBrokers> = {
  name: 'mqtt',
  aliases: [],
  nodeType: 'MqttClient',
  schema: mqttSchema,
  createContext: ({ logger, portHolder, security }) => new EmbeddedBrokers({ logger, portHolder, security }),
  checkSecurity: ({ mqttUsersFile }) => void (mqttUsersFile === undefined ? undefined : readMqttUsers(mqttUsersFile)),
  valueProblem: checkPublishedValue,
  create: ({ settings, accessor, logger, name, instance, context, trace }) =>
    new MqttAdapter({ definition: settings, accessor, logger, name, instance, brokers: context, trace }),
}
