// canvas.present -> first canvas.snapshot, cold and warm: clawmcp node's canvas against the same
// Debian Chromium driven by hand with Playwright (playwright-core), interleaved in one run.
// A script that reports numbers, not a test; bench/canvas.sh installs playwright-core and runs it.
//
//   node bench/canvas_bench.cjs PLAYWRIGHT_DIR CLAWMCP_BIN TMP ROUNDS OUT COMMAND_LINE
//
// Both sides are headless, 800x600, the same page (a solid colour, new per trial) and a PNG:
//   ours cold   a fresh `clawmcp node` (started and ready before the clock starts): tools/call
//               canvas.present {html}, then canvas.snapshot {format: png}, POSTed by this script
//               (no client process); the present starts the browser
//   ours warm   the same two calls on a node whose browser already runs
//   playwright cold   chromium.launch + newPage + setContent + screenshot
//   playwright warm   setContent + screenshot on the open page
// Every node and browser this starts binds to 127.0.0.1 or a pipe and is stopped by PID.
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const [playwrightDir, bin, tmp, roundsText, out, commandLine] = process.argv.slice(2);
const { chromium } = require(path.join(playwrightDir, 'node_modules', 'playwright-core'));
const ROUNDS = Number(roundsText);
const WIDTH = 800;
const HEIGHT = 600;
// The flags the node gives Chromium that matter for start-up (and that this machine's closed
// network needs), so both sides start the same browser the same way.
const CHROMIUM_ARGS = [
  '--no-first-run', '--no-default-browser-check', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-extensions', '--disable-default-apps',
  '--disable-quic', '--disable-dev-shm-usage', '--disable-gpu', '--hide-scrollbars', '--mute-audio',
  ...(process.getuid() === 0 ? ['--no-sandbox'] : []),
];

function page() {
  const colour = Math.floor(Math.random() * 0xffffff).toString(16).padStart(6, '0');
  return `<!doctype html><html><body style="margin:0;background:#${colour}"></body></html>`;
}

const now = () => Number(process.hrtime.bigint()) / 1e6;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class Node {
  static async start(round) {
    const data = fs.mkdtempSync(path.join(tmp, `node-${round}-`));
    fs.chmodSync(data, 0o700);
    fs.writeFileSync(path.join(data, 'settings.json'), '{"NodeCanvasEnabled": true}\n', { mode: 0o600 });
    const port = await freePort();
    const env = { ...process.env };
    delete env.DISPLAY; // headless, as Playwright's side
    delete env.WAYLAND_DISPLAY;
    const log = fs.openSync(path.join(data, 'node.log'), 'a');
    const child = spawn(bin, ['node', '--port', String(port), '--data-dir', data], {
      env, stdio: ['ignore', log, log],
    });
    const node = new Node(child, port, path.join(data, 'mcp-token.txt'));
    const deadline = now() + 30000;
    while (now() < deadline) {
      if (child.exitCode !== null) throw new Error(`clawmcp node exited: ${fs.readFileSync(path.join(data, 'node.log'), 'utf8')}`);
      try {
        await node.call('ping', {}, 'ping');
        return node;
      } catch {
        await sleep(20);
      }
    }
    node.stop();
    throw new Error('clawmcp node did not answer within 30 s');
  }

  constructor(child, port, tokenFile) {
    this.child = child;
    this.url = `http://127.0.0.1:${port}/`;
    this.tokenFile = tokenFile;
    this.id = 0;
  }

  async call(method, params) {
    const token = fs.readFileSync(this.tokenFile, 'utf8').trim();
    const response = await fetch(this.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++this.id, method, params }),
    });
    const body = await response.json();
    if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
    return body.result;
  }

  async tool(name, args) {
    const result = await this.call('tools/call', { name, arguments: args });
    if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
    return result;
  }

  async presentAndSnapshot() {
    await this.tool('canvas.present', { html: page(), width: WIDTH, height: HEIGHT });
    const shot = await this.tool('canvas.snapshot', { format: 'png' });
    const image = shot.content.find((block) => block.type === 'image');
    if (!image || image.mimeType !== 'image/png') throw new Error(`no PNG image block: ${JSON.stringify(shot.content).slice(0, 200)}`);
    return Buffer.from(image.data, 'base64').length;
  }

  stop() {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
    return new Promise((resolve) => {
      if (this.child.exitCode !== null) return resolve();
      const timer = setTimeout(() => { this.child.kill('SIGKILL'); }, 5000);
      this.child.once('exit', () => { clearTimeout(timer); resolve(); });
    });
  }
}

async function playwrightLaunch() {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: WIDTH, height: HEIGHT } });
  const tab = await context.newPage();
  return { browser, tab };
}

async function playwrightShot(tab) {
  await tab.setContent(page());
  return (await tab.screenshot({ type: 'png' })).length;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function main() {
  const times = { 'ours cold': [], 'ours warm': [], 'playwright cold': [], 'playwright warm': [] };
  const bytes = { ours: [], playwright: [] };
  for (let round = 0; round < ROUNDS; round += 1) {
    // Alternate which side goes first, so neither always follows the other's browser exit.
    const sides = round % 2 ? ['playwright', 'ours'] : ['ours', 'playwright'];
    for (const side of sides) {
      if (side === 'ours') {
        const node = await Node.start(round);
        try {
          let start = now();
          bytes.ours.push(await node.presentAndSnapshot());
          times['ours cold'].push(now() - start);
          start = now();
          await node.presentAndSnapshot();
          times['ours warm'].push(now() - start);
        } finally {
          await node.stop();
        }
      } else {
        let start = now();
        const { browser, tab } = await playwrightLaunch();
        bytes.playwright.push(await playwrightShot(tab));
        times['playwright cold'].push(now() - start);
        start = now();
        await playwrightShot(tab);
        times['playwright warm'].push(now() - start);
        await browser.close();
      }
    }
  }
  const row = (name) => {
    const values = times[name];
    return `| ${name} | ${median(values).toFixed(1)} | ${Math.min(...values).toFixed(1)} | ${Math.max(...values).toFixed(1)} |`;
  };
  const ratio = (a, b) => (median(times[a]) / median(times[b])).toFixed(2);
  const load = os.loadavg().map((value) => value.toFixed(2)).join('/');
  const lines = [
    '# canvas.present -> first canvas.snapshot: clawmcp node vs Playwright on the same Chromium',
    '',
    `Command: \`${commandLine}\` (${new Date().toISOString().slice(0, 16)}Z); ${ROUNDS} rounds, each side once per round, order alternating.`,
    `Machine: ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, load average at the end ${load}; Chromium: /usr/bin/chromium (Debian); playwright-core ${require(path.join(playwrightDir, 'node_modules', 'playwright-core', 'package.json')).version}.`,
    '',
    'Both headless, 800x600, a page of one random colour (new per trial), a PNG back. Ours: two',
    'tools/call POSTs (canvas.present {html}, canvas.snapshot {format: png}) from this script to',
    'a `clawmcp node` (release) started before the clock; cold = the present starts the browser.',
    'Playwright: chromium.launch + newContext + newPage + setContent + screenshot (cold), setContent +',
    'screenshot on the open page (warm).',
    '',
    '| method | median ms | min ms | max ms |',
    '| --- | --- | --- | --- |',
    row('ours cold'),
    row('playwright cold'),
    row('ours warm'),
    row('playwright warm'),
    '',
    `Ours / Playwright (medians): cold ${ratio('ours cold', 'playwright cold')}x, warm ${ratio('ours warm', 'playwright warm')}x (below 1: ours is faster).`,
    `PNG bytes (median): ours ${median(bytes.ours)}, Playwright ${median(bytes.playwright)}.`,
    '',
  ];
  const text = lines.join('\n');
  if (out !== '-') fs.writeFileSync(out, text);
  process.stdout.write(text);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
