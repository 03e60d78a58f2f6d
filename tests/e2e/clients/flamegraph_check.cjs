#!/usr/bin/env node
/* flamegraph_check.cjs - open a heaptrail flame graph SVG in headless
 * Chromium (playwright-core, offline), screenshot it, and report what the
 * page shows as JSON on stdout, for tests/e2e/test_export_tools.py:
 *   usage: node flamegraph_check.cjs FILE.svg OUT.png [SEARCH]
 * The checks on the numbers live in the Python test; this script only
 * drives the browser: it reads the frames, clicks one to zoom, types SEARCH
 * into the search box, and records what changed. Needs NODE_PATH (or a
 * cwd) where playwright-core resolves, and /usr/bin/chromium. */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
  const [svgPath, pngPath, term] = process.argv.slice(2);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ht-chromium.'));
  const errors = [];
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1200, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    /* no network: any request but the file itself is an error */
    await page.route('**/*', (r) => (r.request().url().startsWith('file:') ? r.continue()
      : (errors.push('network request: ' + r.request().url()), r.abort())));
    await page.goto('file://' + path.resolve(svgPath));
    await page.waitForTimeout(200);
    await page.screenshot({ path: pngPath });

    const frames = () => page.$$eval('g.frame', (gs) => gs.map((g) => {
      const r = g.querySelector('rect'), t = g.querySelector('text');
      let textEnd = null; /* where the drawn label ends, px */
      if (t.textContent && getComputedStyle(g).display !== 'none') {
        const b = t.getBBox();
        textEnd = b.x + b.width;
      }
      return {
        textEnd,
        name: g.getAttribute('data-name'), value: +g.getAttribute('data-value'),
        self: +g.getAttribute('data-self'), depth: +g.getAttribute('data-depth'),
        root: g.classList.contains('root'), title: g.querySelector('title').textContent,
        text: g.querySelector('text').textContent, width: +r.getAttribute('width'),
        x: +r.getAttribute('x'), y: +r.getAttribute('y'), fill: getComputedStyle(r).fill,
        hidden: getComputedStyle(g).display === 'none', match: g.classList.contains('match'),
      };
    }));
    const svgInfo = await page.$eval('svg', (s) => ({
      width: +s.getAttribute('data-width'), pad: +s.getAttribute('data-pad'),
      total: +s.getAttribute('data-total'), orientation: s.getAttribute('data-orientation'),
      title: document.getElementById('title').textContent,
      subtitle: document.getElementById('subtitle').textContent,
    }));
    const before = await frames();

    /* hover the widest non-root frame: the hover line describes it */
    const widest = before.filter((f) => !f.root).sort((a, b) => b.width - a.width)[0];
    const idx = before.indexOf(widest);
    let hover = null, after = null, zoomIdx = -1;
    if (widest) {
      await page.locator('g.frame').nth(idx).hover({ force: true });
      hover = await page.$eval('#details', (d) => d.textContent);
      /* zoom into the narrowest frame that still has a label-less box
         neighbour: the deepest frame narrower than half the width */
      const cands = before.map((f, i) => [f, i]).filter(([f]) => !f.root && f.width < svgInfo.width / 2);
      cands.sort((a, b) => b[0].depth - a[0].depth || b[0].width - a[0].width);
      zoomIdx = cands.length ? cands[0][1] : idx;
      await page.locator('g.frame').nth(zoomIdx).click({ force: true });
      await page.waitForTimeout(100);
      after = await frames();
      await page.screenshot({ path: pngPath.replace(/\.png$/, '.zoom.png') });
      await page.locator('#unzoom').click({ force: true });
    }
    const reset = await frames();
    let searched = null, matched = null;
    if (term) {
      await page.fill('#search', term);
      await page.waitForTimeout(100);
      searched = await frames();
      matched = await page.$eval('#matched', (m) => ({ text: m.textContent, value: m.getAttribute('data-value') }));
      await page.screenshot({ path: pngPath.replace(/\.png$/, '.search.png') });
    }
    process.stdout.write(JSON.stringify({ svg: svgInfo, before, hover, zoomIdx, after, reset,
      searched, matched, errors }) + '\n');
  } finally {
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((e) => { console.error(e && e.stack || String(e)); process.exit(1); });
