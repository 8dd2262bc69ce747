#!/usr/bin/env node
// kafkajs's producer, driven by tests/clients/test_produce_clients.py.
//
// stdin: one JSON object
//   {"brokers": ["127.0.0.1:9092"], "topic": "t", "idempotent": true, "acks": -1, "compression": "none" | "gzip",
//    "messages": [{"key": "k" | null, "value": "v", "headers": {"h": "x"}, "timestamp": "1700000000000", "partition": 0}]}
// Keys, values and header values are UTF-8 strings.
// stdout: one JSON line: {"ok": true, "value": [<kafkajs's RecordMetadata>...]} or {"ok": false, "error": {"name", "type", "message"}}.
'use strict'

const { Kafka, logLevel, CompressionTypes } = require('kafkajs')

async function main () {
  let input = ''
  for await (const chunk of process.stdin) input += chunk
  const request = JSON.parse(input)
  const kafka = new Kafka({ clientId: 'kafka-shim-tests', brokers: request.brokers, logLevel: logLevel.NOTHING,
    retry: { retries: 2 } })
  const producer = kafka.producer({ idempotent: Boolean(request.idempotent), maxInFlightRequests: request.idempotent ? 1 : 5 })
  await producer.connect()
  try {
    const value = await producer.send({
      topic: request.topic,
      acks: request.acks,
      compression: request.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None,
      messages: request.messages
    })
    process.stdout.write(JSON.stringify({ ok: true, value }) + '\n')
  } catch (error) {
    process.stdout.write(JSON.stringify({ ok: false, error: { name: error.name, type: error.type, message: error.message } }) + '\n')
  } finally {
    await producer.disconnect()
  }
}

main().catch((error) => {
  process.stderr.write(`produce.js: ${error.stack || error}\n`)
  process.exit(1)
})
