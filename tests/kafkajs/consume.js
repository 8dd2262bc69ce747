#!/usr/bin/env node
// kafkajs's consumer in a group (subscribe, JoinGroup/SyncGroup, committed offsets), driven by
// tests/clients/test_classic_group_clients.py.
//
// stdin: one JSON object {"brokers": ["127.0.0.1:9092"], "topic": "t", "groupId": "g", "count": 10, "timeoutMs": 60000}
// It reads from the beginning until it has `count` records (or the time is up), commits and leaves the group.
// stdout: one JSON line: {"ok": true, "messages": [{"partition", "offset", "key", "value"}], "assigned": [partitions]}
//         or {"ok": false, "error": {"name", "type", "message"}, "messages": [...]}.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

async function main () {
  let input = ''
  for await (const chunk of process.stdin) input += chunk
  const request = JSON.parse(input)
  const kafka = new Kafka({ clientId: 'kafka-shim-tests', brokers: request.brokers, logLevel: logLevel.NOTHING,
    retry: { retries: 5 } })
  const consumer = kafka.consumer({ groupId: request.groupId, sessionTimeout: 10000, heartbeatInterval: 1000 })
  const messages = []
  let assigned = []
  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    assigned = (event.payload.memberAssignment[request.topic] || []).slice().sort((a, b) => a - b)
  })
  let finish
  const done = new Promise((resolve) => { finish = resolve })
  const timer = setTimeout(() => finish(false), request.timeoutMs)
  try {
    await consumer.connect()
    await consumer.subscribe({ topic: request.topic, fromBeginning: true })
    await consumer.run({
      autoCommit: true,
      eachMessage: async ({ partition, message }) => {
        messages.push({ partition, offset: message.offset, key: message.key && message.key.toString(),
          value: message.value && message.value.toString() })
        if (messages.length >= request.count) finish(true)
      }
    })
    const ok = await done
    clearTimeout(timer)
    if (!ok) throw new Error(`only ${messages.length} of ${request.count} records within ${request.timeoutMs} ms`)
    await consumer.stop()  // commits what was read before leaving
    process.stdout.write(JSON.stringify({ ok: true, messages, assigned }) + '\n')
  } catch (error) {
    process.stdout.write(JSON.stringify({ ok: false, messages, error: { name: error.name, type: error.type, message: error.message } }) + '\n')
  } finally {
    clearTimeout(timer)
    await consumer.disconnect()
  }
}

main().catch((error) => {
  process.stderr.write(`consume.js: ${error.stack || error}\n`)
  process.exit(1)
})
