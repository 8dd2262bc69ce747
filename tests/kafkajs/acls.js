#!/usr/bin/env node
// kafkajs's ACL admin calls, driven by tests/clients/test_kafkajs_acls.py.
//
// stdin: one JSON object
//   {"brokers": ["127.0.0.1:9093"],
//    "sasl": {"mechanism": "plain" | "scram-sha-256" | "scram-sha-512", "username": "...", "password": "..."},
//    "steps": [{"call": "createAcls" | "describeAcls" | "deleteAcls", "args": {...}}, ...]}
// Enum fields in args (resourceType, resourcePatternType, operation, permissionType) are kafkajs's names
// ("TOPIC", "PREFIXED", "DESCRIBE", "ALLOW"); they are turned into kafkajs's codes here so the tests read
// like the kafkajs documentation, and codes in results are turned back into names.
//
// stdout: one JSON line, {"results": [...]} with one entry per step, in order:
//   {"ok": true, "value": <what kafkajs returned, enums as names>}
//   {"ok": false, "error": {"name", "type", "code", "retriable", "message", "causes": [...]}}
// A step that fails does not stop the later ones. Exit code 0 unless the input itself is unusable (2) or the
// client cannot be set up (1); then stderr says why.
'use strict'

const { Kafka, logLevel, AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes } = require('kafkajs')

const ENUMS = {
  resourceType: AclResourceTypes,
  resourcePatternType: ResourcePatternTypes,
  operation: AclOperationTypes,
  permissionType: AclPermissionTypes,
}
const CALLS = new Set(['createAcls', 'describeAcls', 'deleteAcls'])

function usage (message) {
  process.stderr.write(`acls.js: ${message}\n`)
  process.exit(2)
}

// Names -> codes. An unknown name is passed through unchanged so kafkajs's own validation reports it.
function toCodes (obj) {
  const out = { ...obj }
  for (const [field, table] of Object.entries(ENUMS)) {
    if (typeof out[field] === 'string' && out[field] in table) out[field] = table[out[field]]
  }
  return out
}

function nameOf (table, code) {
  const hit = Object.entries(table).find(([, value]) => value === code)
  return hit ? hit[0] : code
}

// Codes -> names, recursively, for every enum-valued field kafkajs returns.
function toNames (value) {
  if (Array.isArray(value)) return value.map(toNames)
  if (value === null || typeof value !== 'object') return value
  const out = {}
  for (const [key, item] of Object.entries(value)) {
    out[key] = key in ENUMS && typeof item === 'number' ? nameOf(ENUMS[key], item) : toNames(item)
  }
  return out
}

// kafkajs wraps protocol errors (KafkaJSNonRetriableError -> KafkaJSProtocolError); report the chain, with the
// innermost protocol type/code at the top so a test can assert on Kafka's error name directly.
function describeError (error) {
  const causes = []
  for (let e = error; e && causes.length < 5; e = e.cause) {
    causes.push({ name: e.name, type: e.type ?? null, code: e.code ?? null, message: e.message })
    if (e.cause === e) break
  }
  const protocol = causes.find(c => c.type !== null) || {}
  return {
    name: error.name,
    type: protocol.type ?? null,
    code: protocol.code ?? null,
    retriable: error.retriable ?? null,
    message: error.message,
    causes,
  }
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
    usage(`stdin is not JSON (${e.message}); see the comment at the top of this file for the expected shape`)
  }
  const { brokers, sasl, steps } = input
  if (!Array.isArray(brokers) || brokers.length === 0) usage('"brokers" must be a non-empty list of "host:port"')
  if (!Array.isArray(steps)) usage('"steps" must be a list of {"call", "args"}')
  for (const step of steps) {
    if (!CALLS.has(step.call)) usage(`unknown call ${JSON.stringify(step.call)}: use one of ${[...CALLS].join(', ')}`)
  }

  const kafka = new Kafka({
    clientId: 'kafka-shim-kafkajs-acls',
    brokers,
    sasl,
    ssl: false,
    connectionTimeout: 5000,
    requestTimeout: 10000,
    // Authorization failures are not retriable in kafkajs; a couple of quick retries cover only transport hiccups.
    retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 },
    logLevel: logLevel.NOTHING,
  })
  const admin = kafka.admin()
  await admin.connect()
  const results = []
  try {
    for (const { call, args = {} } of steps) {
      const converted = call === 'createAcls'
        ? { acl: (args.acl || []).map(toCodes) }
        : call === 'deleteAcls'
          ? { filters: (args.filters || []).map(toCodes) }
          : toCodes(args)
      try {
        results.push({ ok: true, value: toNames(await admin[call](converted)) })
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
  process.stderr.write(`acls.js: ${JSON.stringify(describeError(error))}\n`)
  process.exit(1)
})
