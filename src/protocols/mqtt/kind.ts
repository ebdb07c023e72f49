import { lazyKind } from '../lazy-kind.js'
import { mqttSchema, type MqttDefinition } from '../../definition/mqtt-schema.js'
import type { EmbeddedBrokers } from './embedded-brokers.js'
import { readMqttUsers } from './users-file.js'

/**
 * The `mqtt` protocol kind: an MQTT client per instance; the embedded brokers are the shared context.
 *
 * @example
 * await mqttKind.load()
 * const brokers = mqttKind.createContext({ logger, security: { productKey: 'k' } })
 * const adapter = mqttKind.create({ settings, accessor, logger, name: 'boiler.mqtt', instance: 'boiler', context: brokers })
 */
export const mqttKind = lazyKind<MqttDefinition, EmbeddedBrokers>(
  {
    name: 'mqtt',
    aliases: [],
    nodeType: 'MqttClient',
    schema: mqttSchema,
    checkSecurity: ({ mqttUsersFile }) => void (mqttUsersFile === undefined ? undefined : readMqttUsers(mqttUsersFile)),
  },
  async () => {
    const [{ MqttAdapter, checkPublishedValue }, { EmbeddedBrokers }] = await Promise.all([import('./adapter.js'), import('./embedded-brokers.js')])
    return {
      createContext: ({ logger, portHolder, security }) => new EmbeddedBrokers({ logger, portHolder, security }),
      valueProblem: checkPublishedValue,
      create: ({ settings, accessor, logger, name, instance, context, trace }) =>
        new MqttAdapter({ definition: settings, accessor, logger, name, instance, brokers: context, trace }),
    }
  },
)
