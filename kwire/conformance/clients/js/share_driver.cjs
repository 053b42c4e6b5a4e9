#!/usr/bin/env node
// @kafkats/client's ShareConsumer behind kwire's JSON-lines driver protocol (op "share_consumer",
// docs/driver-protocol.md; the client side is kwire/conformance/clients/share.py). Each delivered
// record waits in its handler until the test acknowledges it, so many records can be held at
// once (concurrency 1000). Acknowledgements are sent as each is made (the client has no commit).
// usage: KWIRE_NODE_MODULES=<dir> node share_driver.cjs < commands
'use strict'

const path = require('path')
const readline = require('readline')
const { emit: out, hex, moduleRequire } = require('./driver_common.cjs')

const req = moduleRequire(process.env.KWIRE_NODE_MODULES)

let start = null // the share_consumer command
const delivered = [] // records not yet returned by a poll
const held = new Map() // "topic:p:o" -> { message, done }
let consumer = null
let client = null
const stop = new AbortController()

function describe() {
  const version = JSON.parse(require('fs').readFileSync(path.join(process.env.KWIRE_NODE_MODULES, '@kafkats', 'client', 'package.json'))).version
  out({ event: 'describe', name: 'kafkats', version, ops: ['share_consumer'],
    features: ['share_consumer', 'share_renew', 'share_lock_timeout'],
    lacks: {
      share_implicit: `@kafkats/client ${version} acknowledges in the record handler only (no implicit mode switch)`,
      share_commit_async: `@kafkats/client ${version} sends each acknowledgement as it is made (no commitAsync)`,
    } })
  out({ event: 'done' })
}

async function subscribe(topics) {
  client = new KafkaClient({ brokers: start.bootstrap.split(','), clientId: 'kwire-share', logLevel: 'error',
    logger: { debug() {}, info() {}, warn() {}, error() {}, child() { return this } }, ...(start.config?.client || {}) })
  await client.connect()
  consumer = client.shareConsumer({ groupId: start.group_id, maxWaitMs: 200, ...(start.config?.consumer || {}) })
  consumer.on('error', () => {})
  consumer.runEach(topics.length === 1 ? topics[0] : topics, (m) => new Promise((resolve) => {
    held.set(`${m.topic}:${m.partition}:${m.offset}`, { message: m, done: resolve })
    delivered.push(m)
  }), { signal: stop.signal, concurrency: 1000 }).catch(() => {})
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
let KafkaClient = null

async function handle(cmd) {
  const ok = {}
  switch (cmd.op) {
    case 'subscribe': await subscribe(cmd.topics); break
    case 'poll': {
      const deadline = Date.now() + Number(cmd.timeout_ms)
      while (!delivered.length && Date.now() < deadline) await sleep(10)
      for (const m of delivered.splice(0)) {
        // A renewed record queued again but finished since (acknowledged before this poll) is not handed out.
        if (!held.has(`${m.topic}:${m.partition}:${m.offset}`)) continue
        out({ event: 'share_record', topic: m.topic, partition: m.partition, offset: Number(m.offset),
          key: hex(m.key), value: hex(m.value),
          headers: Object.entries(m.headers || {}).map(([k, v]) => [k, hex(v)]),
          delivery_count: m.deliveryCount ?? null })
      }
      ok.acquisition_lock_timeout_ms = consumer ? (consumer.acquisitionLockTimeoutMs ?? null) : null
      break
    }
    case 'acknowledge': {
      const key = `${cmd.topic}:${cmd.partition}:${cmd.offset}`
      const h = held.get(key)
      if (!h) throw new Error(`no record ${key} is held`)
      const action = { ACCEPT: 'ack', RELEASE: 'release', REJECT: 'reject', RENEW: 'renew' }[cmd.type]
      await h.message[action]()
      if (action !== 'renew') { held.delete(key); h.done() } else {
        // The protocol's (and KafkaShareConsumer's) contract: a renewed record comes back from poll.
        delivered.push(h.message)
      }
      break
    }
    case 'commit': case 'commit_async': break // each acknowledgement was sent when made
    case 'lock_timeout': out({ event: 'lock_timeout', ms: consumer ? (consumer.acquisitionLockTimeoutMs ?? null) : null }); break
    default: throw new Error('unknown op ' + cmd.op)
  }
  return ok
}

const queue = []
let busy = false
async function drain() {
  if (busy) return
  busy = true
  while (queue.length) {
    const cmd = queue.shift()
    if (cmd.op === 'close' || cmd.op === 'stop') { await close(); return }
    try {
      const ok = await handle(cmd)
      out({ event: 'ok', op: cmd.op, ...ok })
    } catch (e) {
      out({ event: 'failed', op: cmd.op, error: e.name, message: String(e.message) })
    }
  }
  busy = false
}

async function close() {
  stop.abort()
  try { if (client && client.disconnect) await Promise.race([client.disconnect(), sleep(5000)]) } catch (e) { /* closing anyway */ }
  out({ event: 'closed' })
  process.exit(0)
}

readline.createInterface({ input: process.stdin }).on('line', (l) => {
  if (!l.trim()) return
  const cmd = JSON.parse(l)
  if (start === null) {
    start = cmd
    if (cmd.op === 'describe') { describe(); process.exit(0) }
    if (cmd.op !== 'share_consumer') { out({ event: 'error', error: 'unsupported', message: `op ${cmd.op}` }); process.exit(1) }
    KafkaClient = req('@kafkats/client').KafkaClient
    out({ event: 'ready' })
    return
  }
  queue.push(cmd)
  drain()
}).on('close', () => { queue.push({ op: 'close' }); drain() })
