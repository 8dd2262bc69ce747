#!/usr/bin/env node
// kafkajs's topic admin calls, driven by tests/clients/test_topic_admin_clients.py.
//
// stdin: one JSON object {"brokers": ["127.0.0.1:9092"], "steps": [{"call": "createTopics", "args": {...}}, ...]}
// with calls createTopics, createPartitions, deleteTopics, fetchTopicMetadata and listTopics, args as kafkajs
// documents them. PLAINTEXT only.
//
// stdout: one JSON line, {"results": [...]}, one entry per step, in order:
//   {"ok": true, "value": <what kafkajs returned>}
//   {"ok": false, "error": {"name", "type", "code", "message"}}  (type/code of the innermost protocol error)
// A failing step does not stop the later ones. Exit code 2 for unusable input, 1 if the client cannot connect.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const CALLS = new Set(['createTopics', 'createPartitions', 'deleteTopics', 'fetchTopicMetadata', 'listTopics'])

function usage (message) {
  process.stderr.write(`topics.js: ${message}\n`)
  process.exit(2)
}

function describeError (error) {
  const chain = []
  for (let e = error; e && chain.length < 5; e = e.cause) {
    chain.push(e)
    for (const inner of e.errors || []) chain.push(inner)
    if (e.cause === e) break
  }
  const protocol = chain.find(e => e.type) || {}
  return { name: error.name, type: protocol.type ?? null, code: protocol.code ?? null, message: error.message }
}

async function readStdin () {
  const chunks = []
  for await (const chunk of process.stdin) chunks.push(chunk)
  return Buffer.concat(chunks).toString('utf8')
}

async function main () {
  let input
  try {
    input = JSON.parse(await readStdin())
  } catch (e) {
    usage(`stdin is not JSON (${e.message})`)
  }
  const { brokers, steps } = input
  if (!Array.isArray(brokers) || brokers.length === 0) usage('"brokers" must be a non-empty list of "host:port"')
  if (!Array.isArray(steps)) usage('"steps" must be a list of {"call", "args"}')
  for (const step of steps) {
    if (!CALLS.has(step.call)) usage(`unknown call ${JSON.stringify(step.call)}: use one of ${[...CALLS].join(', ')}`)
  }
  const kafka = new Kafka({
    clientId: 'kafka-shim-kafkajs-topics',
    brokers,
    connectionTimeout: 5000,
    requestTimeout: 10000,
    retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 },
    logLevel: logLevel.NOTHING,
  })
  const admin = kafka.admin()
  await admin.connect()
  const results = []
  try {
    for (const { call, args = {} } of steps) {
      try {
        const value = await admin[call](args)
        results.push({ ok: true, value: value === undefined ? null : value })
      } catch (error) {
        results.push({ ok: false, error: describeError(error) })
      }
    }
  } finally {
    await admin.disconnect()
  }
  process.stdout.write(JSON.stringify({ results }) + '\n')
}

main().catch(error => {
  process.stderr.write(`topics.js: ${JSON.stringify(describeError(error))}\n`)
  process.exit(1)
})
