#!/usr/bin/env node
// @confluentinc/kafka-javascript (librdkafka underneath) behind kwire's JSON-lines driver protocol
// (docs/driver-protocol.md), through its KafkaJS-compatible API: describe, produce, consume,
// member (classic and KIP-848 groups), producer, txn_producer (with send_offsets). It has no share
// consumer, which describe says.
// usage: KWIRE_NODE_MODULES=<dir> node confluent_js_driver.cjs < command.json
'use strict'

const fs = require('fs')
const path = require('path')
const common = require('./driver_common.cjs')

const { emit, hex, unhex } = common
const dir = process.env.KWIRE_NODE_MODULES
const req = common.moduleRequire(dir)
const SESSION_TIMEOUT_MS = 6000
const HEARTBEAT_INTERVAL_MS = 500

const nextLine = common.stdinLines()
const nextCommand = (deadline) => common.nextCommand(nextLine, deadline)

const mod = () => req('@confluentinc/kafka-javascript')
const version = () => JSON.parse(fs.readFileSync(path.join(dir, '@confluentinc', 'kafka-javascript', 'package.json'))).version
function kafka(cmd) {
  const { Kafka, logLevel } = mod().KafkaJS
  return new Kafka({ kafkaJS: { brokers: cmd.bootstrap.split(','), clientId: 'kwire-confluent-js', logLevel: logLevel.NOTHING },
    ...((cmd.config || {}).client || {}) })
}
const message = (r) => {
  const m = { key: unhex(r.key), value: unhex(r.value),
    headers: Object.fromEntries((r.headers || []).map(([k, v]) => [k, unhex(v)])) }
  if (r.partition !== null && r.partition !== undefined) m.partition = r.partition
  return m
}
const record = (partition, m) => ({
  event: 'record', partition, offset: Number(m.offset), key: hex(m.key), value: hex(m.value),
  headers: Object.entries(m.headers || {}).map(([k, v]) => [k, hex(Array.isArray(v) ? v[0] : v)]),
})

function producer(cmd, extra) {
  const codec = cmd.compression && cmd.compression !== 'none' ? { compression: cmd.compression } : {}
  return kafka(cmd).producer({ kafkaJS: { acks: cmd.acks ?? -1, ...codec, ...extra }, ...((cmd.config || {}).producer || {}) })
}

// One record per send: the KafkaJS API answers one base offset per partition, so a single-record
// send names that record's exact place.
async function sendOne(p, topic, r) {
  const [md] = await p.send({ topic, messages: [message(r)] })
  return [md.partition, Number(md.baseOffset ?? md.offset)]
}

function consumer(cmd, groupId, extra) {
  const classic = cmd.group_protocol !== 'consumer'
  const kjs = { groupId, fromBeginning: cmd.from_beginning !== false, autoCommit: false,
    ...(classic ? { sessionTimeout: SESSION_TIMEOUT_MS, heartbeatInterval: HEARTBEAT_INTERVAL_MS } : {}), ...extra }
  return kafka(cmd).consumer({ kafkaJS: kjs, ...(classic ? {} : { 'group.protocol': 'consumer' }),
    ...((cmd.config || {}).consumer || {}) })
}

// sendOffsetsToTransaction: the KafkaJS API takes a consumer (not a group id) and hands librdkafka
// its group metadata; a connected consumer that never subscribes gives the group with generation -1
// and member "", like Java's ConsumerGroupMetadata(group).
async function sendOffsets(cmd, txn, c) {
  const cons = consumer(cmd, c.group, {})
  await cons.connect()
  try {
    const topics = new Map()
    for (const o of c.offsets) {
      if (!topics.has(o.topic)) topics.set(o.topic, [])
      topics.get(o.topic).push({ partition: o.partition, offset: String(o.offset) })
    }
    await txn.sendOffsets({ consumer: cons, topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) })
  } finally { await cons.disconnect() }
}

const ops = {
  describe() {
    emit({ event: 'describe', name: 'confluent_js', version: version(), codecs: ['none', 'gzip', 'snappy', 'lz4', 'zstd'],
      ops: ['produce', 'consume', 'member', 'producer', 'txn_producer'], kip848: true, features: [],
      lacks: { share_consumer: `@confluentinc/kafka-javascript ${version()} (librdkafka ${mod().librdkafkaVersion}) has no share consumer in its API` } })
  },

  async produce(cmd) {
    const p = producer(cmd, {})
    await p.connect()
    try {
      for (const r of cmd.records) {
        const [partition, offset] = await sendOne(p, cmd.topic, r)
        emit({ event: 'produced', partition, offset })
      }
    } finally { await p.disconnect() }
  },

  async producer(cmd) {
    const p = producer(cmd, {})
    await p.connect()
    emit({ event: 'ready' })
    await common.producerLoop(nextLine, Date.now() + cmd.timeout_ms, (r) => sendOne(p, cmd.topic, r))
    await p.disconnect()
    emit({ event: 'closed' })
  },

  async txn_producer(cmd) {
    const p = producer(cmd, { transactionalId: cmd.transactional_id, idempotent: true })
    await p.connect() // InitProducerId for a transactional producer
    emit({ event: 'ready' })
    let txn = null
    await common.txnLoop(nextLine, Date.now() + cmd.timeout_ms, {
      begin: async () => { txn = await p.transaction() },
      send: async (records) => {
        const placed = []
        for (const r of records) placed.push(await sendOne(txn, cmd.topic, r))
        return placed
      },
      send_offsets: (c) => sendOffsets(cmd, txn, c),
      commit: async () => { await txn.commit(); txn = null },
      abort: async () => { await txn.abort(); txn = null },
    })
    await p.disconnect()
    emit({ event: 'closed' })
  },

  // The KafkaJS API reads only as a group member: "no group" is a throwaway group that never commits.
  async consume(cmd) {
    const group = cmd.group_id || `kwire-nogroup-${process.pid}-${Date.now()}`
    const committed = cmd.isolation_level === 'read_committed'
    const c = consumer(cmd, group, committed ? { readUncommitted: false } : {})
    let got = 0
    let finish
    const done = new Promise((resolve) => { finish = resolve })
    await c.connect()
    try {
      await c.subscribe({ topics: [cmd.topic] })
      await c.run({
        eachMessage: async ({ partition, message: m }) => {
          if (got >= cmd.count) return
          if (cmd.group_id) await c.commitOffsets([{ topic: cmd.topic, partition, offset: (BigInt(m.offset) + 1n).toString() }])
          emit(record(partition, m))
          if (++got >= cmd.count) finish()
        },
      })
      await Promise.race([done, new Promise((resolve) => setTimeout(resolve, cmd.timeout_ms))])
    } finally { await c.disconnect() }
  },

  async member(cmd) {
    const c = consumer(cmd, cmd.group_id, {})
    await c.connect()
    await c.subscribe({ topics: [cmd.topic] })
    await c.run({
      eachMessage: async ({ partition, message: m }) => {
        try {
          await c.commitOffsets([{ topic: cmd.topic, partition, offset: (BigInt(m.offset) + 1n).toString() }])
        } catch (e) { emit({ event: 'commit_failed', message: String(e.message) }); return }
        emit(record(partition, m))
      },
    })
    // assignment() is the whole current assignment under both protocols: report each change.
    let shown = null
    const watch = setInterval(() => {
      let now
      try { now = c.assignment() } catch (e) { return }
      const mine = [...new Set(now.filter((a) => a.topic === cmd.topic).map((a) => a.partition))].sort((a, b) => a - b)
      if (JSON.stringify(mine) !== shown) { shown = JSON.stringify(mine); emit({ event: 'assignment', partitions: mine }) }
    }, 100)
    emit({ event: 'ready' })
    const deadline = Date.now() + cmd.timeout_ms
    while (await nextCommand(deadline) !== null) { /* only stop ends a member */ }
    clearInterval(watch)
    await c.disconnect()
    emit({ event: 'closed' })
  },
}

common.runDriver(nextLine, ops, { dir }).then((rc) => process.exit(rc))
