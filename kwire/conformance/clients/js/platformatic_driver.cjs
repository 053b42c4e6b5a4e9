#!/usr/bin/env node
// @platformatic/kafka behind kwire's JSON-lines driver protocol (docs/driver-protocol.md):
// describe, produce, consume, member (classic and KIP-848 groups), producer, txn_producer (with
// send_offsets).
// @platformatic/kafka has no share consumer (KIP-932), which describe says.
// usage: KWIRE_NODE_MODULES=<dir> node platformatic_driver.cjs < command.json
'use strict'

const fs = require('fs')
const path = require('path')
const common = require('./driver_common.cjs')

const { emit, hex } = common
// platformatic wants undefined, not null, for an absent key or header value.
const unhex = (s) => common.unhex(s) ?? undefined

// @platformatic/kafka targets node >= 22 and uses Promise.withResolvers (ES2024); Debian 12 ships
// node 20, so the driver supplies the one missing builtin (its specified behaviour, nothing more).
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function withResolvers() {
    let resolve, reject
    const promise = new this((res, rej) => { resolve = res; reject = rej })
    return { promise, resolve, reject }
  }
}

const dir = process.env.KWIRE_NODE_MODULES
const req = common.moduleRequire(dir)
const SESSION_TIMEOUT_MS = 6000
const HEARTBEAT_INTERVAL_MS = 500

const nextLine = common.stdinLines()
const nextCommand = (deadline) => common.nextCommand(nextLine, deadline)

function version() {
  return JSON.parse(fs.readFileSync(path.join(dir, '@platformatic', 'kafka', 'package.json'))).version
}

// The adapter's TLS and SASL settings are platformatic's own (tls: node's tls.connect options, sasl:
// mechanism/username/password/token), except OAUTHBEARER's ``kwireOauthPrincipal``, which becomes a
// token provider making an unsecured JWS (called again at each re-authentication).
const withSecurity = (client) => common.withOauth(client, (principal) => ({ token: () => common.unsecuredJws(principal) }))
const base = (cmd, clientId) => ({ clientId, bootstrapBrokers: cmd.bootstrap.split(','), ...withSecurity((cmd.config || {}).client || {}) })
const message = (topic, r) => {
  const m = { topic, key: unhex(r.key), value: unhex(r.value) ?? null,
    headers: new Map((r.headers || []).map(([k, v]) => [Buffer.from(k), unhex(v) ?? Buffer.alloc(0)])) }
  if (r.partition !== null && r.partition !== undefined) m.partition = r.partition
  return m
}
const offsetOf = (result, topic) => (result.offsets || []).find((o) => o.topic === topic)
const record = (m) => ({
  event: 'record', partition: m.partition, offset: Number(m.offset), key: hex(m.key), value: hex(m.value),
  headers: [...(m.headers || new Map())].map(([k, v]) => [Buffer.from(k).toString(), hex(v)]),
})

function producer(cmd, extra) {
  const { Producer } = req('@platformatic/kafka')
  return new Producer({ ...base(cmd, 'kwire-platformatic'), ...extra, ...((cmd.config || {}).producer || {}) })
}

// One record per send: platformatic answers one base offset per partition, so a single-record
// send names that record's exact place whatever partition the client picked.
async function sendOne(p, cmd, r, extra) {
  const res = await p.send({ messages: [message(cmd.topic, r)], acks: cmd.acks ?? -1,
    ...(cmd.compression && cmd.compression !== 'none' ? { compression: cmd.compression } : {}), ...extra })
  const o = offsetOf(res, cmd.topic)
  return [o ? o.partition : r.partition, o ? Number(o.offset) : null]
}

// sendOffsetsToTransaction for a group the producer does not consume in: platformatic's API is
// Transaction.addConsumer(consumer) (AddOffsetsToTxn for consumer.groupId), then addOffset(message)
// per partition (TxnOffsetCommit of message.offset + 1 with message.metadata.consumer's group,
// generation, member and coordinator). The driver's consumer never joins, so each "message" carries
// what Java's ConsumerGroupMetadata(group) does: generation -1, member "" (no fencing by generation).
async function sendOffsets(cmd, txn, c) {
  const { Consumer } = req('@platformatic/kafka')
  const consumer = new Consumer({ ...base(cmd, 'kwire-platformatic'), groupId: c.group })
  try {
    const coordinatorId = await consumer.findGroupCoordinator()
    await txn.addConsumer(consumer)
    const meta = { consumer: { groupId: c.group, generationId: -1, memberId: '', coordinatorId } }
    // One at a time: the producer deduplicates concurrent TxnOffsetCommits into one.
    for (const o of c.offsets) {
      await txn.addOffset({ topic: o.topic, partition: o.partition, offset: BigInt(o.offset) - 1n, metadata: meta })
    }
  } finally { await consumer.close() }
}

const ops = {
  describe() {
    emit({ event: 'describe', name: 'platformatic', version: version(), codecs: ['none', 'gzip', 'snappy', 'lz4', ...(require('zlib').zstdCompress ? ['zstd'] : [])],
      ops: ['produce', 'consume', 'member', 'producer', 'txn_producer'], kip848: true,
      features: [],
      lacks: { share_consumer: `@platformatic/kafka ${version()} has no share consumer (KIP-932)` } })
  },

  async produce(cmd) {
    const p = producer(cmd, {})
    try {
      for (const r of cmd.records) {
        const [partition, offset] = await sendOne(p, cmd, r, {})
        emit({ event: 'produced', partition, offset })
      }
    } finally { await p.close() }
  },

  async producer(cmd) {
    const p = producer(cmd, (cmd.config || {}).idempotent ? { idempotent: true } : {})
    emit({ event: 'ready' })
    await common.producerLoop(nextLine, Date.now() + cmd.timeout_ms, (r) => sendOne(p, cmd, r, {}))
    await p.close()
    emit({ event: 'closed' })
  },

  async txn_producer(cmd) {
    const p = producer(cmd, { transactionalId: cmd.transactional_id, idempotent: true })
    await p.initIdempotentProducer({})
    emit({ event: 'ready' })
    let txn = null
    await common.txnLoop(nextLine, Date.now() + cmd.timeout_ms, {
      begin: async () => { txn = await p.beginTransaction() },
      send: async (records) => {
        const placed = []
        for (const r of records) {
          const o = offsetOf(await txn.send({ messages: [message(cmd.topic, r)], acks: -1 }), cmd.topic)
          placed.push([o ? o.partition : r.partition, o ? Number(o.offset) : null])
        }
        return placed
      },
      send_offsets: (c) => sendOffsets(cmd, txn, c),
      commit: async () => { await txn.commit(); txn = null },
      abort: async () => { await txn.abort(); txn = null },
    })
    await p.close()
    emit({ event: 'closed' })
  },

  consumer(cmd, groupId) {
    const { Consumer } = req('@platformatic/kafka')
    const proto = cmd.group_protocol === 'consumer' ? { groupProtocol: 'consumer' } : { sessionTimeout: SESSION_TIMEOUT_MS, heartbeatInterval: HEARTBEAT_INTERVAL_MS }
    return new Consumer({ ...base(cmd, 'kwire-platformatic'), groupId, ...proto, ...((cmd.config || {}).consumer || {}) })
  },

  // platformatic always reads as a group member: "no group" is a throwaway group that never commits.
  async consume(cmd) {
    const group = cmd.group_id || `kwire-nogroup-${process.pid}-${Date.now()}`
    const c = ops.consumer(cmd, group)
    const committed = cmd.isolation_level === 'read_committed' || ((cmd.config || {}).consumer || {}).isolationLevel === 1
    const stream = await c.consume({ topics: [cmd.topic], mode: cmd.from_beginning === false ? 'latest' : 'earliest',
      autocommit: false, maxWaitTime: 100, ...(committed ? { isolationLevel: 1 } : {}) })
    let got = 0
    const deadline = Date.now() + cmd.timeout_ms
    try {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, Math.max(deadline - Date.now(), 0))
        stream.on('error', reject)
        stream.on('data', async (m) => {
          if (got >= cmd.count) return
          got++
          if (cmd.group_id) await m.commit()
          emit(record(m))
          if (got >= cmd.count) { clearTimeout(timer); resolve() }
        })
      })
    } finally {
      await stream.close()
      await c.close(true)
    }
  },

  async member(cmd) {
    const c = ops.consumer(cmd, cmd.group_id)
    // consumer.assignments is the whole current assignment under both group protocols (the
    // KIP-848 path emits no join payload with it): report each change.
    let shown = null
    const watch = setInterval(() => {
      const mine = [...new Set((c.assignments || []).filter((a) => a.topic === cmd.topic).flatMap((a) => a.partitions))]
        .sort((a, b) => a - b)
      if (c.assignments !== null && JSON.stringify(mine) !== shown) {
        shown = JSON.stringify(mine)
        emit({ event: 'assignment', partitions: mine })
      }
    }, 100)
    const stream = await c.consume({ topics: [cmd.topic], mode: 'committed', fallbackMode: 'earliest', autocommit: false, maxWaitTime: 100 })
    stream.on('data', async (m) => {
      try { await m.commit() } catch (e) { emit({ event: 'commit_failed', message: String(e.message) }); return }
      emit(record(m))
    })
    stream.on('error', () => {})
    emit({ event: 'ready' })
    const deadline = Date.now() + cmd.timeout_ms
    while (await nextCommand(deadline) !== null) { /* only stop ends a member */ }
    clearInterval(watch)
    await stream.close()
    await c.close(true)
    emit({ event: 'closed' })
  },
}

common.runDriver(nextLine, ops, { dir, hidden: ['consumer'] }).then((rc) => process.exit(rc))
