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
const moduleRequire = (dir) => createRequire(path.join(dir || '.', 'noop.js'))

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

// The adapters give OAUTHBEARER as ``sasl.kwireOauthPrincipal``; ``provider(principal)`` returns the
// sasl settings the client wants in its place (a token or a provider function).
function withOauth(conf, provider) {
  if (!conf || !conf.sasl || conf.sasl.kwireOauthPrincipal === undefined) return conf || {}
  const { kwireOauthPrincipal, ...sasl } = conf.sasl
  return { ...conf, sasl: { ...sasl, ...provider(kwireOauthPrincipal) } }
}

module.exports = { emit, hex, unhex, moduleRequire, stdinLines, nextBefore, nextCommand, unsecuredJws, withOauth }
