#!/usr/bin/env node
// kafkajs's config admin calls (describeConfigs, alterConfigs), driven by tests/clients/test_kafkajs_configs.py.
//
// stdin: one JSON object {"brokers": ["127.0.0.1:9092"], "steps": [{"call": "describeConfigs" | "alterConfigs",
// "args": {...}}, ...]}, resource types as kafkajs's ConfigResourceTypes names ("TOPIC", "BROKER").
// stdout: one JSON line {"results": [...]}, per step {"ok": true, "value": ...} or {"ok": false, "error": {...}}.
'use strict'

const { Kafka, logLevel, ConfigResourceTypes } = require('kafkajs')

function toCodes (args) {
  const out = { ...args }
  if (Array.isArray(out.resources)) {
    out.resources = out.resources.map(r => ({ ...r, type: ConfigResourceTypes[r.type] ?? r.type }))
  }
  return out
}

function errorOf (error) {
  let inner = error
  while (inner && inner.cause && !inner.type) inner = inner.cause
  return { name: error.name, type: inner && inner.type, code: inner && inner.code, message: error.message }
}

async function main () {
  let input = ''
  for await (const chunk of process.stdin) input += chunk
  const request = JSON.parse(input)
  const kafka = new Kafka({ clientId: 'kafka-shim-configs', brokers: request.brokers, logLevel: logLevel.NOTHING,
    retry: { retries: 0 }, requestTimeout: 20000 })
  const admin = kafka.admin()
  await admin.connect()
  const results = []
  for (const step of request.steps) {
    try {
      results.push({ ok: true, value: await admin[step.call](toCodes(step.args)) })
    } catch (error) {
      results.push({ ok: false, error: errorOf(error) })
    }
  }
  await admin.disconnect()
  process.stdout.write(JSON.stringify({ results }) + '\n')
}

main().catch(error => {
  process.stderr.write(`configs.js: ${error.stack || error}\n`)
  process.exit(1)
})
