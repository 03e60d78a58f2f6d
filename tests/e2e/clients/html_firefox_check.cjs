#!/usr/bin/env node
/* html_firefox_check.cjs - open a heaptrail HTML page from disk in headless
 * Firefox (Debian's firefox-esr, stock: driven over WebDriver BiDi, the
 * protocol it speaks with --remote-debugging-port) with a fresh profile
 * kept offline, click every tab, and print as JSON what the page showed,
 * the errors Firefox logged and the requests it made:
 *   usage: node html_firefox_check.cjs FILE.html
 * The WebSocket client is the one playwright-core bundles (NODE_PATH where
 * it resolves); FIREFOX overrides /usr/bin/firefox. */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const WebSocket = require('playwright-core/lib/utilsBundle').ws;

async function main() {
  const file = 'file://' + path.resolve(process.argv[2]);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ht-firefox.'));
  /* offline: every request but the file's own goes to a closed port */
  fs.writeFileSync(path.join(profile, 'user.js'), [
    'user_pref("network.proxy.type", 1);',
    'user_pref("network.proxy.http", "127.0.0.1"); user_pref("network.proxy.http_port", 9);',
    'user_pref("network.proxy.ssl", "127.0.0.1"); user_pref("network.proxy.ssl_port", 9);',
    'user_pref("network.proxy.allow_hijacking_localhost", true);',
    'user_pref("browser.shell.checkDefaultBrowser", false);',
    'user_pref("datareporting.policy.dataSubmissionEnabled", false);',
    'user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);',
    'user_pref("app.update.disabledForTesting", true);',
    'user_pref("browser.startup.homepage_override.mstone", "ignore");',
    'user_pref("remote.prefs.recommended", true);',
  ].join('\n') + '\n');
  const ff = spawn(process.env.FIREFOX || '/usr/bin/firefox',
    ['--headless', '--no-remote', '--profile', profile, '--remote-debugging-port', '0', 'about:blank'],
    { stdio: ['ignore', 'ignore', 'pipe'], env: Object.assign({}, process.env, { MOZ_CRASHREPORTER_DISABLE: '1' }) });
  let stderr = '';
  const out = { errors: [], requests: [] };
  try {
    const url = await new Promise((resolve, reject) => {
      ff.stderr.on('data', (d) => {
        stderr += d;
        const m = /WebDriver BiDi listening on (ws:\/\/\S+)/.exec(stderr);
        if (m) resolve(m[1]);
      });
      ff.on('exit', (c) => reject(new Error('firefox exited (' + c + '): ' + stderr.slice(-2000))));
    });
    const ws = new WebSocket(url.replace(/\/$/, '') + '/session');
    await new Promise((r, j) => { ws.on('open', r); ws.on('error', j); });
    let id = 0;
    const pending = new Map();
    ws.on('message', (raw) => {
      const msg = JSON.parse(String(raw));
      if (msg.id !== undefined && pending.has(msg.id)) {
        const { resolve, reject } = pending.get(msg.id);
        pending.delete(msg.id);
        if (msg.type === 'error') reject(new Error(msg.error + ': ' + msg.message)); else resolve(msg.result);
      } else if (msg.method === 'log.entryAdded') {
        const e = msg.params;
        if (e.level === 'error' || e.type === 'javascript') out.errors.push(e.level + ': ' + e.text);
      } else if (msg.method === 'network.beforeRequestSent') {
        const u = msg.params.request.url;
        if (u !== file) out.requests.push(u);
      }
    });
    const send = (method, params) => new Promise((resolve, reject) => {
      pending.set(++id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
    await send('session.new', { capabilities: {} });
    await send('session.subscribe', { events: ['log.entryAdded', 'network.beforeRequestSent'] });
    const tree = await send('browsingContext.getTree', {});
    const context = tree.contexts[0].context;
    const t0 = Date.now();
    await send('browsingContext.navigate', { context, url: file, wait: 'complete' });
    out.load_ms = Date.now() - t0;
    /* every tab in turn, then what the page shows */
    const r = await send('script.evaluate', {
      target: { context }, awaitPromise: false, resultOwnership: 'none',
      expression: `JSON.stringify((() => {
        const tabs = [...document.querySelectorAll('#tabs button')];
        for (const b of tabs) b.click();
        if (tabs.length) tabs[0].click();
        const v = (sel) => { const e = document.querySelector(sel); return e ? (e.dataset.value !== undefined ? e.dataset.value : e.textContent) : null; };
        return { ready: document.documentElement.dataset.ready || null, tabs: tabs.map((b) => b.textContent),
          allocations: v('#sum-allocations'), bytes: v('#sum-bytes'),
          diff_bytes: (document.querySelector('#dsum-bytes_allocated') || { dataset: {} }).dataset.new || null,
          frames: document.querySelectorAll('.fr').length, pwned: window.__pwned === undefined ? null : String(window.__pwned) };
      })())`,
    });
    Object.assign(out, JSON.parse(r.result.value));
    await send('browsingContext.navigate', { context, url: 'about:blank', wait: 'complete' }).catch(() => {});
    ws.close();
  } finally {
    process.stdout.write(JSON.stringify(out) + '\n');
    ff.kill('SIGTERM');
    await new Promise((r) => { if (ff.exitCode !== null) r(); else { ff.on('exit', r); setTimeout(() => { ff.kill('SIGKILL'); r(); }, 5000); } });
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((e) => { console.error(e && e.stack || String(e)); process.exit(1); });
