#!/usr/bin/env node
// A @kafkats/client ShareConsumer driven from a test: each delivered record is printed as
// "rec PARTITION OFFSET DELIVERYCOUNT VALUE" and the handler waits for the test's verdict on
// stdin ("renew", then "ack" | "release" | "reject"), printing "done ACTION OFFSET" after each.
// usage: KWIRE_NODE_MODULES=<dir> node share_driver.cjs BOOTSTRAP GROUP TOPIC
'use strict'

const path = require('path')
const readline = require('readline')
const { createRequire } = require('module')

const req = createRequire(path.join(process.env.KWIRE_NODE_MODULES, 'noop.js'))
const { KafkaClient } = req('@kafkats/client')
const [bootstrap, group, topic] = process.argv.slice(2)

const verdicts = []
const waiting = []
readline.createInterface({ input: process.stdin }).on('line', (l) => {
  if (!l.trim()) return
  if (waiting.length) waiting.shift()(l.trim())
  else verdicts.push(l.trim())
})
const next = () => (verdicts.length ? Promise.resolve(verdicts.shift()) : new Promise((r) => waiting.push(r)))

async function main() {
  const client = new KafkaClient({ brokers: [bootstrap], clientId: 'kwire-share', logLevel: 'error' })
  await client.connect()
  const consumer = client.shareConsumer({ groupId: group, maxWaitMs: 200 })
  const stop = new AbortController()
  process.stdin.on('end', () => stop.abort())
  consumer.on('error', (e) => console.log('error ' + e.message))
  await consumer.runEach(topic, async (m) => {
    console.log(`rec ${m.partition} ${m.offset} ${m.deliveryCount ?? -1} ${m.value ? m.value.toString() : ''}`)
    for (;;) {
      const v = await next()
      if (v === 'stop') { stop.abort(); return }
      if (v === 'lock') { console.log(`lock ${consumer.acquisitionLockTimeoutMs}`); continue }
      await m[v]()
      console.log(`done ${v} ${m.offset}`)
      if (v !== 'renew') return
    }
  }, { signal: stop.signal, concurrency: 1 })
  await client.disconnect()
  console.log('closed')
}

main().catch((e) => { console.log('fatal ' + e.stack); process.exit(1) })
