// Runs the public cache-tests suite against Herald's response cache, as the suite tests a browser's cache:
// the suite's server and herald-cache-proxy (one Herald session, cache on) on loopback, and the suite's own
// client in browser mode (`runTests(tests, true, base)`) pointed at the proxy. Prints a summary beside the
// browsers' published results (the suite's results/*.json) and the tests that fail here but pass in all three
// browsers. Run it inside .ci/loopback-only: the suite's server listens on every interface.
//
//     node CacheTests/run.mjs --suite DIR --proxy PATH [--cache-directory DIR] [--out results.json]
//                             [--id TEST_ID] [--expect-none-below-browsers]
//
// With --expect-none-below-browsers, exits 1 when a test that all three browsers pass fails here, unless
// CacheTests/known-differences.txt names it (each is explained in the Caching article).
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { pathToFileURL } from 'node:url'

const args = process.argv.slice(2)
function option (name) {
  const index = args.indexOf(name)
  return index >= 0 ? args[index + 1] : undefined
}
const suite = option('--suite')
const proxyPath = option('--proxy')
if (!suite || !proxyPath) {
  console.error('usage: run.mjs --suite DIR --proxy PATH [--cache-directory DIR] [--out FILE] [--id TEST_ID]')
  process.exit(64)
}
if (!fs.existsSync(path.join(suite, 'test-engine', 'client', 'runner.mjs'))) {
  console.error(`run.mjs: no cache-tests suite at ${suite} (set CACHE_TESTS to its folder)`)
  process.exit(66)
}

const suiteModule = relative => import(pathToFileURL(path.join(suite, relative)).href)
const { runTests, getResults } = await suiteModule('test-engine/client/runner.mjs')
const { determineTestResult } = await suiteModule('test-engine/lib/results.mjs')
const tests = (await suiteModule('tests/index.mjs')).default

/** A port nothing listens on now. */
async function freePort () {
  const server = net.createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address()
  server.close()
  await once(server, 'close')
  return port
}

/** Resolves once `port` accepts a connection; rejects after `seconds`. */
async function listening (port, seconds) {
  const deadline = Date.now() + seconds * 1000
  while (Date.now() < deadline) {
    const connected = await new Promise(resolve => {
      const socket = net.connect(port, '127.0.0.1')
      socket.once('connect', () => { socket.destroy(); resolve(true) })
      socket.once('error', () => resolve(false))
    })
    if (connected) return
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  throw new Error(`nothing listens on 127.0.0.1:${port} after ${seconds} s`)
}

const children = []
function stopChildren () {
  for (const child of children) {
    if (child.exitCode === null) child.kill('SIGTERM')
  }
}
process.on('exit', stopChildren)

// The suite's server.
const serverPort = await freePort()
const server = spawn(process.execPath, [path.join(suite, 'test-engine/server/server.mjs')], {
  cwd: suite,
  env: {
    ...process.env,
    npm_config_port: String(serverPort),
    npm_config_protocol: 'http',
    npm_config_pidfile: path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cache-tests-')), 'server.pid')
  },
  stdio: ['ignore', 'ignore', 'inherit']
})
children.push(server)
await listening(serverPort, 60)

// The proxy: its port is the first line it prints; it stops when its stdin closes.
const proxyArgs = ['--upstream', `http://127.0.0.1:${serverPort}`]
if (option('--cache-directory')) proxyArgs.push('--cache-directory', option('--cache-directory'))
const proxy = spawn(proxyPath, proxyArgs, { stdio: ['pipe', 'pipe', 'inherit'] })
children.push(proxy)
const firstLine = await Promise.race([
  once(readline.createInterface({ input: proxy.stdout }), 'line').then(([line]) => line),
  once(proxy, 'exit').then(([code]) => { throw new Error(`herald-cache-proxy exited with ${code}`) })
])
const base = `http://127.0.0.1:${parseInt(firstLine)}`

// Browser mode, as the published browser results were made: browser-only tests in, CDN-only tests out.
const id = option('--id')
let selected = tests
if (id) {
  selected = tests.map(s => ({ ...s, tests: s.tests.filter(t => t.id === id) })).filter(s => s.tests.length)
  for (const s of selected) for (const t of s.tests) t.dump = true
}
const started = Date.now()
await runTests(selected, true, base)
const results = getResults()
const seconds = ((Date.now() - started) / 1000).toFixed(0)
proxy.stdin.end()
stopChildren()
if (option('--out')) fs.writeFileSync(option('--out'), JSON.stringify(results, null, 2) + '\n')

// The tests browser mode runs, and how each run classes them.
const browserTests = []
for (const s of tests) {
  for (const t of s.tests) {
    if (t.cdn_only === true || t.browser_skip === true) continue
    browserTests.push(t)
  }
}
const required = t => (t.kind ?? 'required') === 'required'
function summary (run) {
  const passed = browserTests.filter(t => run[t.id] === true)
  return {
    passed: passed.length,
    failed: browserTests.filter(t => run[t.id] !== undefined && run[t.id] !== true).length,
    required: passed.filter(required).length
  }
}
const browsers = {}
for (const name of ['chrome', 'firefox', 'safari']) {
  browsers[name] = JSON.parse(fs.readFileSync(path.join(suite, 'results', `${name}.json`), 'utf8'))
}

if (id) {
  console.log(`${id}: ${JSON.stringify(results[id])} ` +
    `(${determineTestResult(tests, id, results, false)[2]}; ` +
    Object.entries(browsers).map(([name, run]) => `${name} ${JSON.stringify(run[id])}`).join(', ') + ')')
  process.exit(0)
}

const total = browserTests.length
const requiredTotal = browserTests.filter(required).length
const row = (name, s) => `${name.padEnd(8)} ${String(s.passed).padStart(3)} of ${total} passed, ` +
  `${String(s.failed).padStart(3)} failed, required ${s.required} of ${requiredTotal}`
console.log(`cache-tests, browser mode (${seconds} s)`)
console.log(row('Herald', summary(results)))
for (const [name, run] of Object.entries(browsers)) console.log(row(name, summary(run)))

const belowBrowsers = browserTests.filter(t =>
  results[t.id] !== true && Object.values(browsers).every(run => run[t.id] === true))
// The differences the documentation explains (CacheTests/known-differences.txt) are listed, not failed.
const knownFile = new URL('known-differences.txt', import.meta.url)
const known = new Set(fs.readFileSync(knownFile, 'utf8').split('\n')
  .map(line => line.trim()).filter(line => line && !line.startsWith('#')))
console.log(`\nFailing here, passing in all three browsers: ${belowBrowsers.length}`)
for (const t of belowBrowsers) {
  const result = results[t.id]
  const why = Array.isArray(result) ? result.join(': ') : String(result)
  const note = known.has(t.id) ? ' (a documented difference)' : ''
  console.log(`  ${t.id} — ${t.name}${note}\n      ${why}`)
}
const unexplained = belowBrowsers.filter(t => !known.has(t.id))
if (args.includes('--expect-none-below-browsers') && unexplained.length > 0) process.exit(1)
process.exit(0)
