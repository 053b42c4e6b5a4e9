#!/usr/bin/env node
// @kafkats/client's ShareConsumer behind kwire's line protocol for share drivers
// (kwire/conformance/clients/share.py). Each delivered record waits in its handler until the
// test acknowledges it, so many records can be held at once (concurrency 1000).
// usage: KWIRE_NODE_MODULES=<dir> node share_driver.cjs BOOTSTRAP GROUP
'use strict'

const path = require('path')
const readline = require('readline')
const { createRequire } = require('module')

const req = createRequire(path.join(process.env.KWIRE_NODE_MODULES, 'noop.js'))
const { KafkaClient } = req('@kafkats/client')
const [bootstrap, group] = process.argv.slice(2)

const delivered = [] // records not yet printed by a poll
const held = new Map() // "p:o" -> { message, done }
let consumer = null
let client = null
const stop = new AbortController()
const out = (s) => process.stdout.write(s + '\n')

async function start(topic) {
  client = new KafkaClient({ brokers: bootstrap.split(','), clientId: 'kwire-share', logLevel: 'error',
    logger: { debug() {}, info() {}, warn() {}, error() {}, child() { return this } } })
  await client.connect()
  consumer = client.shareConsumer({ groupId: group, maxWaitMs: 200 })
  consumer.on('error', () => {})
  consumer.runEach(topic, (m) => new Promise((resolve) => {
    held.set(`${m.partition}:${m.offset}`, { message: m, done: resolve })
    delivered.push(m)
  }), { signal: stop.signal, concurrency: 1000 }).catch(() => {})
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

async function handle(cmd) {
  switch (cmd[0]) {
    case 'subscribe': await start(cmd[1]); break
    case 'poll': {
      const deadline = Date.now() + Number(cmd[1])
      while (!delivered.length && Date.now() < deadline) await sleep(10)
      for (const m of delivered.splice(0)) {
        out(`rec ${m.partition} ${m.offset} ${m.deliveryCount ?? -1} ${m.value ? m.value.toString() : ''}`)
      }
      break
    }
    case 'ack': {
      const h = held.get(`${cmd[1]}:${cmd[2]}`)
      if (!h) throw new Error('not held')
      const action = { ACCEPT: 'ack', RELEASE: 'release', REJECT: 'reject', RENEW: 'renew' }[cmd[3]]
      await h.message[action]()
      if (action !== 'renew') { held.delete(`${cmd[1]}:${cmd[2]}`); h.done() }
      break
    }
    case 'commit': case 'commitasync': break // each acknowledgement was sent when made
    case 'locktimeout': out(`lock ${consumer ? consumer.acquisitionLockTimeoutMs : -1}`); break
    case 'close': stop.abort(); out('ok'); process.exit(0)
    default: throw new Error('unknown command ' + cmd[0])
  }
}

const queue = []
let busy = false
async function drain() {
  if (busy) return
  busy = true
  while (queue.length) {
    const cmd = queue.shift()
    try { await handle(cmd); out('ok') } catch (e) { out(`error ${e.name} ${String(e.message).replace(/\n/g, ' ')}`) }
  }
  busy = false
}
readline.createInterface({ input: process.stdin }).on('line', (l) => {
  if (!l.trim()) return
  queue.push(l.trim().split(' '))
  drain()
})
