// What every node driver of kwire's JSON-lines protocol (docs/driver-protocol.md) shares: events on
// stdout, hex for bytes, stdin as a pull queue of commands, the client package loaded from
// KWIRE_NODE_MODULES, and an unsecured OAUTHBEARER token.
// The drivers require it as './driver_common.cjs': node resolves that from the requiring file's own
// directory, whatever the working directory node was started in.
'use strict'

const path = require('path')
const readline = require('readline')
const { createRequire } = require('module')

const emit = (ev) => process.stdout.write(JSON.stringify(ev) + '\n')
const hex = (b) => (b === null || b === undefined ? null : Buffer.from(b).toString('hex'))
const unhex = (s) => (s === null || s === undefined ? null : Buffer.from(s, 'hex'))

// require() for the client packages, which live in the clients cache (tools/install_clients.sh),
// not next to the drivers.
const moduleRequire = (dir) => createRequire(path.resolve(dir || '.', 'noop.js'))

// stdin as a pull queue: the returned function resolves to the next non-empty line, null at EOF.
function stdinLines() {
  const lines = []
  const waiting = []
  let ended = false
  readline.createInterface({ input: process.stdin })
    .on('line', (l) => { if (!l.trim()) return; if (waiting.length) waiting.shift()(l); else lines.push(l) })
    .on('close', () => { ended = true; while (waiting.length) waiting.shift()(null) })
  return () => new Promise((resolve) => {
    if (lines.length) resolve(lines.shift()); else if (ended) resolve(null); else waiting.push(resolve)
  })
}

// The next line from ``next``, or null at EOF or once ``deadline`` (epoch ms) has passed.
function nextBefore(next, deadline) {
  let timer
  const t = new Promise((resolve) => { timer = setTimeout(() => resolve(null), Math.max(deadline - Date.now(), 0)) })
  return Promise.race([next(), t]).finally(() => clearTimeout(timer))
}

// The next command before ``deadline``, parsed; null at EOF, at the deadline or on "stop".
async function nextCommand(next, deadline) {
  const line = await nextBefore(next, deadline)
  if (line === null) return null
  const c = JSON.parse(line)
  return c.op === 'stop' ? null : c
}

// An unsecured JWS (alg none) for ``principal`` as Kafka's unsecured login makes one
// (OAuthBearerUnsecuredLoginCallbackHandler: sub, iat, exp; an hour's lifetime).
function unsecuredJws(principal) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url')
  const now = Math.floor(Date.now() / 1000)
  return `${b64({ alg: 'none' })}.${b64({ sub: principal, iat: now, exp: now + 3600 })}.`
}

// op txn_producer after ``ready``: one step at a time until stop, EOF or ``deadline``. ``steps`` has
// the client's begin/send/send_offsets/commit/abort (a step gets its command; ``send`` gets the
// records and resolves to their [partition, offset] in order); each step is answered with a "txn"
// or "txn_failed" event.
async function txnLoop(next, deadline, steps) {
  for (;;) {
    const c = await nextCommand(next, deadline)
    if (c === null) break
    try {
      if (c.op === 'send') {
        const records = c.records || []
        const placed = await steps.send(records)
        records.forEach((r, i) => emit({ event: 'produced', seq: r.seq, partition: placed[i][0], offset: placed[i][1] }))
      } else if (Object.hasOwn(steps, c.op)) {
        await steps[c.op](c)
      } else {
        throw new Error(`unknown step ${c.op}`)
      }
      emit({ event: 'txn', step: c.op })
    } catch (e) {
      emit({ event: 'txn_failed', step: c.op, error: (e && e.name) || 'Error', message: String((e && e.message) || e) })
    }
  }
}

// op producer after ``ready`` for a client that sends one record at a time: each record of each
// "send" command goes out after the one before it was answered (``sendOne(record)`` resolves to
// [partition, offset]) and is reported as produced or produce_failed; resolves once stop, EOF or
// ``deadline`` came and every record was answered.
async function producerLoop(next, deadline, sendOne) {
  let chain = Promise.resolve()
  for (;;) {
    const c = await nextCommand(next, deadline)
    if (c === null) break
    for (const r of c.records || []) {
      chain = chain.then(async () => {
        try {
          const [partition, offset] = await sendOne(r)
          emit({ event: 'produced', seq: r.seq, partition, offset })
        } catch (e) { emit({ event: 'produce_failed', seq: r.seq, message: String(e.message) }) }
      })
    }
  }
  await chain
}

// An error event's words: the message, and those of an AggregateError's inner errors.
function errorEvent(e) {
  const inner = (e && Array.isArray(e.errors)) ? ': ' + e.errors.map((x) => String((x && x.message) || x)).join('; ') : ''
  return { event: 'error', error: (e && e.name) || 'Error', message: String((e && e.message) || e) + inner }
}

// A driver's main: the first line from ``next`` is the command, run by ``ops[cmd.op]`` (``hidden``:
// names in ``ops`` that are helpers, not ops); an error event on failure, "done" after a one-shot op
// (member, producer and txn_producer report "closed" themselves). Resolves to the exit status.
async function runDriver(next, ops, { dir, hidden = [] } = {}) {
  const first = await next()
  if (first === null) return 0
  const cmd = JSON.parse(first)
  if (!dir) { emit({ event: 'error', error: 'setup', message: 'KWIRE_NODE_MODULES is not set' }); return 1 }
  if (!Object.hasOwn(ops, cmd.op) || hidden.includes(cmd.op)) {
    emit({ event: 'error', error: 'unsupported', message: `op ${cmd.op} is not implemented` })
    return 1
  }
  try {
    await ops[cmd.op](cmd)
  } catch (e) {
    emit(errorEvent(e))
    return 1
  }
  if (!['member', 'producer', 'txn_producer'].includes(cmd.op)) emit({ event: 'done' })
  return 0
}

// The adapters give OAUTHBEARER as ``sasl.kwireOauthPrincipal``; ``provider(principal)`` returns the
// sasl settings the client wants in its place (a token or a provider function).
function withOauth(conf, provider) {
  if (!conf || !conf.sasl || conf.sasl.kwireOauthPrincipal === undefined) return conf || {}
  const { kwireOauthPrincipal, ...sasl } = conf.sasl
  return { ...conf, sasl: { ...sasl, ...provider(kwireOauthPrincipal) } }
}

module.exports = {
  emit, hex, unhex, moduleRequire, stdinLines, nextBefore, nextCommand, txnLoop, producerLoop, errorEvent, runDriver,
  unsecuredJws, withOauth,
}
