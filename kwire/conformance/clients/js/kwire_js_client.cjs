#!/usr/bin/env node
// kwire conformance driver for the Node clients: kafkajs 2.2.4 and @kafkats/client 0.12.0.
//
// usage: KWIRE_NODE_MODULES=<dir> node kwire_js_client.cjs kafkajs|kafkats < command.json
// Speaks the JSON-lines protocol described in kwire/conformance/clients/base.py: the
// first stdin line is the command, events go to stdout one per line, hex for bytes.
// The packages live in the clients cache (tools/install_clients.sh), not next to this
// file, hence createRequire on KWIRE_NODE_MODULES.
'use strict'

const { emit, hex, unhex, moduleRequire, stdinLines, nextCommand, txnLoop, errorEvent, unsecuredJws, withOauth } = require('./driver_common.cjs')

const USAGE = 'usage: KWIRE_NODE_MODULES=<dir> node kwire_js_client.cjs kafkajs|kafkats < command.json\n'
const SESSION_TIMEOUT_MS = 6000 // the broker's minimum; keeps rebalances short
const HEARTBEAT_INTERVAL_MS = 500

function loadModule(name) {
  const dir = process.env.KWIRE_NODE_MODULES
  if (!dir) throw new Error('KWIRE_NODE_MODULES is not set')
  return moduleRequire(dir)(name)
}

// OAUTHBEARER: both clients take an async provider of {value: token}.
const withSecurity = (conf) => withOauth(conf, (principal) => ({ oauthBearerProvider: async () => ({ value: unsecuredJws(principal) }) }))

// stdin: the first line is the command; later lines are member commands; EOF = stop.
async function waitForStop(next) {
  for (;;) {
    const line = await next()
    if (line === null || JSON.parse(line).op === 'stop') return
  }
}

function withDeadline(promise, ms, what) {
  let timer
  const t = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms) })
  return Promise.race([promise, t]).finally(() => clearTimeout(timer))
}

class Assignment {
  constructor() { this.owned = new Set() }
  set(parts) { this.owned = new Set(parts); this.report() }
  add(parts) { for (const p of parts) this.owned.add(p); this.report() }
  remove(parts) { for (const p of parts) this.owned.delete(p); this.report() }
  report() { emit({ event: 'assignment', partitions: [...this.owned].sort((a, b) => a - b) }) }
}

const jsMessages = (records) => records.map((r) => {
  const m = {
    key: unhex(r.key),
    value: unhex(r.value),
    headers: Object.fromEntries((r.headers || []).map(([k, v]) => [k, unhex(v)])),
  }
  if (r.partition !== null && r.partition !== undefined) m.partition = r.partition
  return m
})

// ---- kafkajs ---------------------------------------------------------------------------

const kafkajs = {
  client(cmd) {
    const { Kafka, logLevel } = loadModule('kafkajs')
    return new Kafka({
      clientId: 'kwire-kafkajs',
      brokers: cmd.bootstrap.split(','),
      logLevel: logLevel.NOTHING,
      retry: { retries: 5, initialRetryTime: 100 },
      ...withSecurity((cmd.config || {}).client),
    })
  },

  async produce(cmd) {
    const { CompressionTypes, Partitioners } = loadModule('kafkajs')
    const codecs = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }
    if (!(cmd.compression in codecs)) throw new Error(`kafkajs has no built-in codec ${cmd.compression}`)
    const kafka = kafkajs.client(cmd)
    const admin = kafka.admin()
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, ...(cmd.config || {}).producer })
    await producer.connect()
    try {
      // kafkajs reports one base offset per partition, so every record needs a known
      // partition: pick missing ones with kafkajs's own default partitioner.
      let records = cmd.records
      if (records.some((r) => r.partition === null || r.partition === undefined)) {
        await admin.connect()
        const md = await admin.fetchTopicMetadata({ topics: [cmd.topic] })
        await admin.disconnect()
        const partitioner = Partitioners.DefaultPartitioner()
        const partitionMetadata = md.topics[0].partitions
        records = records.map((r) => (r.partition === null || r.partition === undefined
          ? { ...r, partition: partitioner({ topic: cmd.topic, partitionMetadata, message: { key: unhex(r.key), value: unhex(r.value) } }) }
          : r))
      }
      const messages = records.map((r) => ({
        key: unhex(r.key),
        value: unhex(r.value),
        partition: r.partition,
        headers: Object.fromEntries((r.headers || []).map(([k, v]) => [k, unhex(v)])),
      }))
      const res = await producer.send({ topic: cmd.topic, messages, acks: cmd.acks, compression: codecs[cmd.compression], timeout: cmd.timeout_ms })
      const base = new Map(res.map((m) => [m.partition, BigInt(m.baseOffset)]))
      const seen = new Map()
      for (const r of records) {
        const n = seen.get(r.partition) || 0n
        seen.set(r.partition, n + 1n)
        emit({ event: 'produced', partition: r.partition, offset: Number(base.get(r.partition) + n) })
      }
    } finally {
      await producer.disconnect()
    }
  },

  // A long-lived producer: "send" lines are chained so records stay in order; offsets come
  // from the base offset of each answer.
  async producer(cmd, next) {
    const { CompressionTypes, Partitioners } = loadModule('kafkajs')
    const codecs = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }
    if (!(cmd.compression in codecs)) throw new Error(`kafkajs has no built-in codec ${cmd.compression}`)
    const kafka = kafkajs.client(cmd)
    const admin = kafka.admin()
    await admin.connect()
    const md = await admin.fetchTopicMetadata({ topics: [cmd.topic] })
    await admin.disconnect()
    const partitionMetadata = md.topics[0].partitions
    const partitioner = Partitioners.DefaultPartitioner()
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, ...(cmd.config || {}).producer })
    await producer.connect()
    emit({ event: 'ready' })
    // One producer.send per partition. kafkajs keeps the answers of a send per broker
    // across its retries: when a retry finds a partition's new leader among brokers that
    // already answered, it skips that broker and resolves without ever writing those
    // records (tulios/kafkajs#1303, #1798). A single-partition send cannot hit that.
    const sendPartition = async (partition, records) => {
      const messages = records.map((r) => ({
        key: unhex(r.key),
        value: unhex(r.value),
        partition,
        headers: Object.fromEntries((r.headers || []).map(([k, v]) => [k, unhex(v)])),
      }))
      let res
      try {
        res = await producer.send({ topic: cmd.topic, messages, acks: cmd.acks, compression: codecs[cmd.compression], timeout: Math.min(cmd.timeout_ms, 30000) })
      } catch (e) {
        for (const r of records) emit({ event: 'produce_failed', seq: r.seq, message: String(e.message) })
        return
      }
      const answer = res.find((m) => m.partition === partition)
      if (!answer) {
        for (const r of records) emit({ event: 'produce_failed', seq: r.seq, message: `send() resolved without an answer for partition ${partition}` })
        return
      }
      records.forEach((r, i) => emit({ event: 'produced', seq: r.seq, partition, offset: Number(BigInt(answer.baseOffset) + BigInt(i)) }))
    }
    const sendChunk = async (records) => {
      const byPartition = new Map()
      for (const r of records) {
        const p = r.partition === null || r.partition === undefined
          ? partitioner({ topic: cmd.topic, partitionMetadata, message: { key: unhex(r.key), value: unhex(r.value) } })
          : r.partition
        if (!byPartition.has(p)) byPartition.set(p, [])
        byPartition.get(p).push(r)
      }
      await Promise.all([...byPartition].map(([p, rs]) => sendPartition(p, rs)))
    }
    let chain = Promise.resolve()
    const deadline = Date.now() + cmd.timeout_ms
    for (;;) {
      const c = await nextCommand(next, deadline)
      if (c === null) break
      const records = c.records || []
      chain = chain.then(() => sendChunk(records))
    }
    await withDeadline(chain, Math.max(deadline - Date.now(), 1000), 'kafkajs producer flush')
    await producer.disconnect()
    emit({ event: 'closed' })
  },

  // kafkajs: producer.transaction() begins; txn.send / commit / abort. Its send answers one
  // base offset per partition, so records name their partition (the scenario always does).
  async txn_producer(cmd, next) {
    const kafka = kafkajs.client(cmd)
    const producer = kafka.producer({
      transactionalId: cmd.transactional_id, idempotent: true, maxInFlightRequests: 1,
      ...(cmd.config || {}).producer,
    })
    await producer.connect() // runs InitProducerId for a transactional producer
    emit({ event: 'ready' })
    let txn = null
    await txnLoop(next, Date.now() + cmd.timeout_ms, {
      begin: async () => { txn = await producer.transaction() },
      send: async (records) => {
        if (records.some((r) => r.partition === null || r.partition === undefined)) {
          throw new Error('the kafkajs driver needs an explicit partition for every transactional record')
        }
        const res = await txn.send({ topic: cmd.topic, messages: jsMessages(records), acks: -1 })
        const base = new Map(res.map((m) => [m.partition, BigInt(m.baseOffset)]))
        const seen = new Map()
        return records.map((r) => {
          const n = seen.get(r.partition) || 0n
          seen.set(r.partition, n + 1n)
          return [r.partition, Number(base.get(r.partition) + n)]
        })
      },
      send_offsets: async (c) => {
        const topics = new Map()
        for (const o of c.offsets) {
          if (!topics.has(o.topic)) topics.set(o.topic, [])
          topics.get(o.topic).push({ partition: o.partition, offset: String(o.offset) })
        }
        await txn.sendOffsets({
          consumerGroupId: c.group,
          topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })),
        })
      },
      commit: async () => { await txn.commit(); txn = null },
      abort: async () => { await txn.abort(); txn = null },
    })
    await producer.disconnect()
    emit({ event: 'closed' })
  },

  record(partition, m) {
    return {
      event: 'record',
      partition,
      offset: Number(m.offset),
      key: hex(m.key),
      value: hex(m.value),
      headers: Object.entries(m.headers || {}).map(([k, v]) => [k, hex(v)]),
    }
  },

  consumer(cmd, groupId) {
    return kafkajs.client(cmd).consumer({
      groupId,
      sessionTimeout: SESSION_TIMEOUT_MS,
      heartbeatInterval: HEARTBEAT_INTERVAL_MS,
      maxWaitTimeInMs: 100,
      ...(cmd.config || {}).consumer,
    })
  },

  async consume(cmd) {
    // kafkajs always joins a group; "no group" becomes a throwaway group that never commits.
    const group = cmd.group_id || `kwire-nogroup-${process.pid}-${Date.now()}`
    const consumer = kafkajs.consumer(cmd, group)
    let got = 0
    let finish
    const done = new Promise((resolve) => { finish = resolve })
    await consumer.connect()
    try {
      await consumer.subscribe({ topic: cmd.topic, fromBeginning: cmd.from_beginning !== false })
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          if (got >= cmd.count) return
          if (cmd.group_id) {
            await consumer.commitOffsets([{ topic: cmd.topic, partition, offset: (BigInt(message.offset) + 1n).toString() }])
          }
          emit(kafkajs.record(partition, message))
          if (++got >= cmd.count) finish()
        },
      })
      await Promise.race([done, new Promise((resolve) => setTimeout(resolve, cmd.timeout_ms))])
    } finally {
      await consumer.disconnect()
    }
  },

  async member(cmd, next) {
    const consumer = kafkajs.consumer(cmd, cmd.group_id)
    const owned = new Assignment()
    // GROUP_JOIN carries the whole assignment after each rebalance (kafkajs is eager).
    consumer.on(consumer.events.GROUP_JOIN, (e) => owned.set((e.payload.memberAssignment || {})[cmd.topic] || []))
    await consumer.connect()
    await consumer.subscribe({ topic: cmd.topic, fromBeginning: cmd.from_beginning !== false })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        try {
          await consumer.commitOffsets([{ topic: cmd.topic, partition, offset: (BigInt(message.offset) + 1n).toString() }])
        } catch (e) {
          emit({ event: 'commit_failed', message: String(e.message) })
          throw e // kafkajs retries the message after the rebalance
        }
        emit(kafkajs.record(partition, message))
      },
    })
    emit({ event: 'ready' })
    await Promise.race([waitForStop(next), new Promise((resolve) => setTimeout(resolve, cmd.timeout_ms))])
    await consumer.disconnect()
    emit({ event: 'closed' })
  },
}

// ---- @kafkats/client -------------------------------------------------------------------

const kafkats = {
  async client(cmd) {
    const { KafkaClient } = loadModule('@kafkats/client')
    const client = new KafkaClient({
      brokers: cmd.bootstrap.split(','),
      clientId: 'kwire-kafkats',
      requestTimeoutMs: Math.min(cmd.timeout_ms, 30000),
      logLevel: 'error',
      logger: { debug() {}, info() {}, warn() {}, error() {}, child() { return this } },
      ...withSecurity((cmd.config || {}).client),
    })
    await client.connect()
    return client
  },

  async produce(cmd) {
    const client = await kafkats.client(cmd)
    const acks = { '-1': 'all', 1: 'leader', 0: 'none' }[String(cmd.acks)]
    const producer = client.producer({ compression: cmd.compression, acks, lingerMs: 5, ...(cmd.config || {}).producer })
    try {
      const res = await producer.send(cmd.topic, jsMessages(cmd.records))
      for (const r of Array.isArray(res) ? res : [res]) {
        emit({ event: 'produced', partition: r.partition, offset: Number(r.offset) })
      }
    } finally {
      await producer.disconnect()
      await client.disconnect()
    }
  },

  // A long-lived producer: each "send" line becomes one producer.send, chained in order.
  async producer(cmd, next) {
    const client = await kafkats.client(cmd)
    const acks = { '-1': 'all', 1: 'leader', 0: 'none' }[String(cmd.acks)]
    const producer = client.producer({ compression: cmd.compression, acks, lingerMs: 5, ...(cmd.config || {}).producer })
    emit({ event: 'ready' })
    const sendChunk = async (records) => {
      let res
      try {
        res = await producer.send(cmd.topic, jsMessages(records))
      } catch (e) {
        for (const r of records) emit({ event: 'produce_failed', seq: r.seq, message: String(e.message) })
        return
      }
      res = Array.isArray(res) ? res : [res]
      records.forEach((r, i) => emit({ event: 'produced', seq: r.seq, partition: res[i].partition, offset: Number(res[i].offset) }))
    }
    let chain = Promise.resolve()
    const deadline = Date.now() + cmd.timeout_ms
    for (;;) {
      const c = await nextCommand(next, deadline)
      if (c === null) break
      const records = c.records || []
      chain = chain.then(() => sendChunk(records))
    }
    await withDeadline(chain, Math.max(deadline - Date.now(), 1000), 'kafkats producer flush')
    await producer.disconnect()
    await client.disconnect()
    emit({ event: 'closed' })
  },

  // kafkats has only the callback form producer.transaction(async tx => ...): commit when the
  // callback resolves, abort when it throws. Each transaction is one callback that waits for
  // the steps the parent sends; InitProducerId runs at the first transaction.
  async txn_producer(cmd, next) {
    const client = await kafkats.client(cmd)
    const producer = client.producer({
      transactionalId: cmd.transactional_id, idempotent: true, acks: 'all', lingerMs: 0,
      ...(cmd.config || {}).producer,
    })
    emit({ event: 'ready' })
    const ABORT = new Error('kwire: abort requested')
    let inbox = null // the open transaction's step channel
    let ended = null // resolves when the open transaction's callback settles
    await txnLoop(next, Date.now() + cmd.timeout_ms, {
      begin: async () => {
        const queue = []
        const waiting = []
        inbox = {
          put: (step) => new Promise((resolve, reject) => {
            const item = { step, resolve, reject }
            if (waiting.length) waiting.shift()(item)
            else queue.push(item)
          }),
          take: () => new Promise((resolve) => { if (queue.length) resolve(queue.shift()); else waiting.push(resolve) }),
        }
        const box = inbox
        let started
        const begun = new Promise((resolve) => { started = resolve })
        ended = producer.transaction(async (tx) => {
          started()
          for (;;) {
            const item = await box.take()
            if (item.step.op === 'commit') { item.resolve(); return }
            if (item.step.op === 'abort') { item.resolve(); throw ABORT }
            if (item.step.op === 'send_offsets') {
              try {
                await tx.sendOffsets({
                  groupId: item.step.group,
                  offsets: item.step.offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: BigInt(o.offset) })),
                })
                item.resolve()
              } catch (e) {
                item.reject(e)
                throw e
              }
              continue
            }
            try {
              const res = await tx.send(cmd.topic, jsMessages(item.step.records))
              const list = Array.isArray(res) ? res : [res]
              item.resolve(list.map((r) => [r.partition, Number(r.offset)]))
            } catch (e) {
              item.reject(e)
              throw e
            }
          }
        })
        ended.catch(() => {}) // settled below; avoid an unhandled rejection meanwhile
        await Promise.race([begun, ended])
      },
      send: async (records) => inbox.put({ op: 'send', records }),
      send_offsets: async (c) => inbox.put({ op: 'send_offsets', group: c.group, offsets: c.offsets }),
      commit: async () => {
        await inbox.put({ op: 'commit' })
        await ended // the commit (EndTxn) happens after the callback resolves
      },
      abort: async () => {
        await inbox.put({ op: 'abort' })
        try {
          await ended
        } catch (e) {
          // kafkats rethrows the callback's error wrapped as TransactionAbortedError once aborted
          const ours = e === ABORT || (e && e.cause === ABORT) ||
            (e && e.name === 'TransactionAbortedError' && String(e.message).includes(ABORT.message))
          if (!ours) throw e
        }
      },
    })
    await producer.disconnect()
    await client.disconnect()
    emit({ event: 'closed' })
  },

  record(m) {
    return {
      event: 'record',
      partition: m.partition,
      offset: Number(m.offset),
      key: hex(m.key),
      value: hex(m.value),
      headers: Object.entries(m.headers || {}).map(([k, v]) => [k, hex(v)]),
    }
  },

  consumer(client, cmd, groupId) {
    return client.consumer({
      groupId,
      autoOffsetReset: cmd.from_beginning === false ? 'latest' : 'earliest',
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
      maxWaitMs: 100,
      ...(cmd.config || {}).consumer,
    })
  },

  async consume(cmd) {
    const client = await kafkats.client(cmd)
    const ac = new AbortController()
    const timer = setTimeout(() => ac.abort(), cmd.timeout_ms)
    const opts = { signal: ac.signal, autoCommitIntervalMs: 100 }
    if (!cmd.group_id) {
      // Manual assignment: no JoinGroup, no commits.
      const md = await client.getMetadata([cmd.topic])
      const topic = md.topics.get(cmd.topic)
      if (!topic) throw new Error(`no metadata for topic ${cmd.topic}`)
      const parts = [...topic.partitions.keys()].sort((a, b) => a - b)
      // Explicit start offsets: without them kafkats asks OffsetFetch for committed ones.
      const starts = await client.admin().fetchTopicOffsets(cmd.topic, parts, cmd.from_beginning === false ? 'latest' : 'earliest')
      opts.assignment = parts.map((partition) => ({ topic: cmd.topic, partition, offset: starts.get(partition) }))
      opts.commitOffsets = false
    }
    const consumer = kafkats.consumer(client, cmd, cmd.group_id || `kwire-nogroup-${process.pid}`)
    let got = 0
    try {
      stage = 'kafkats consume runEach'
      await consumer.runEach(cmd.topic, async (m) => {
        if (got >= cmd.count) return
        emit(kafkats.record(m))
        if (++got >= cmd.count) ac.abort()
      }, opts)
    } finally {
      clearTimeout(timer)
      stage = `kafkats consume stop after ${got} of ${cmd.count} records`
      consumer.stop()
      await client.disconnect()
      stage = 'kafkats consume done'
    }
  },

  async member(cmd, next) {
    const client = await kafkats.client(cmd)
    const consumer = kafkats.consumer(client, cmd, cmd.group_id)
    const owned = new Assignment()
    consumer.on('partitionsAssigned', (ps) => owned.add(ps.map((p) => p.partition)))
    consumer.on('partitionsRevoked', (ps) => owned.remove(ps.map((p) => p.partition)))
    consumer.on('partitionsLost', (ps) => owned.remove(ps.map((p) => p.partition)))
    const ac = new AbortController()
    // kafkats commits marked offsets every 100 ms and always before a revoke or stop,
    // so a reported record is committed before its partition changes owner.
    const running = consumer.runEach(cmd.topic, async (m) => { emit(kafkats.record(m)) },
      { signal: ac.signal, autoCommitIntervalMs: 100 })
    emit({ event: 'ready' })
    const stopped = waitForStop(next).then(() => 'stop')
    const ended = running.then(() => 'ended')
    await Promise.race([stopped, ended, new Promise((resolve) => setTimeout(resolve, cmd.timeout_ms))])
    consumer.stop()
    await withDeadline(running, 20000, 'kafkats stop')
    await client.disconnect()
    emit({ event: 'closed' })
  },
}

const CLIENTS = { kafkajs, kafkats }

async function main() {
  const which = process.argv[2]
  if (!which || which === '--help' || which === '-h' || !(which in CLIENTS)) {
    process.stdout.write(USAGE)
    process.exit(which === '--help' || which === '-h' ? 0 : 2)
  }
  const next = stdinLines()
  const first = await next()
  if (first === null) throw new Error('no command on stdin')
  const cmd = JSON.parse(first)
  const impl = CLIENTS[which]
  if (!(cmd.op in impl) || cmd.op === 'client' || cmd.op === 'record' || cmd.op === 'consumer') {
    throw new Error(`unknown op ${cmd.op}`)
  }
  await impl[cmd.op](cmd, next)
  if (!['member', 'producer', 'txn_producer'].includes(cmd.op)) emit({ event: 'done' })
}

// Exit once stdout has drained: writes to a full pipe are queued, and process.exit()
// would drop them (a consumer's last records and its "done" went missing that way).
function exitAfterFlush(code) {
  process.stdout.write('', () => process.exit(code))
}

// Node exits quietly (status 0) when nothing is left to wait for, even while main()'s
// promise is still pending: report that as an error instead of a silent exit.
let stage = 'start'
process.on('beforeExit', () => {
  emit({ event: 'error', error: 'EventLoopDrained', message: `node ran out of work with the operation unfinished (at ${stage})` })
  exitAfterFlush(1)
})

main().then(
  () => exitAfterFlush(0),
  (e) => {
    emit(errorEvent(e))
    exitAfterFlush(1)
  },
)
