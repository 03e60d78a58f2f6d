#!/usr/bin/env node
/* html_diff_check.cjs - open a `heaptrail diff --format html` page in
 * headless Chromium (playwright-core, offline) and print what its views
 * show as JSON, for tests/e2e/test_html.py:
 *   usage: node html_diff_check.cjs FILE.html SHOTDIR ZOOM
 * It reads the totals side by side, the differential flame graph (clicking
 * the frame named ZOOM), and the changes table sorted by its change column
 * both ways. Needs NODE_PATH where playwright-core resolves, and
 * /usr/bin/chromium. */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
  const [htmlPath, shotDir, zoomName] = process.argv.slice(2);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ht-chromium.'));
  const errors = [], requests = [];
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1300, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const out = {};
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') errors.push(m.type() + ': ' + m.text()); });
    await page.route('**/*', (r) => {
      const u = r.request().url();
      if (u === 'file://' + path.resolve(htmlPath)) return r.continue();
      requests.push(u);
      return r.abort();
    });
    const shot = async (name) => { if (shotDir) await page.screenshot({ path: path.join(shotDir, name + '.png') }); };
    const t0 = Date.now();
    await page.goto('file://' + path.resolve(htmlPath), { waitUntil: 'load' });
    await page.waitForSelector('#dtotals');
    out.load_ms = Date.now() - t0;
    out.tabs = await page.$$eval('#tabs button', (bs) => bs.map((b) => b.textContent));
    out.totals = await page.$$eval('#dtotals tbody tr', (trs) => Object.fromEntries(trs.map((tr) =>
      [tr.id.slice(5), { base: tr.dataset.base, new: tr.dataset.new, change: tr.children[3].textContent, cls: tr.children[3].className }])));
    out.status = await page.$eval('#dstatus', (e) => e.textContent);
    await shot('diff-summary');

    const frames = () => page.$$eval('#dfg .fr', (es) => es.map((e) => ({
      name: e._node.name, base: +e.dataset.base, new: +e.dataset.new, depth: +e.dataset.depth,
      width: e.getBoundingClientRect().width, bg: e.style.background, anc: e.classList.contains('anc'),
    })));
    await page.click('#tabs button[data-view=dflame]');
    out.fg_width = await page.$eval('#dfg', (e) => e.clientWidth);
    out.fg = await frames();
    const idx = out.fg.findIndex((f) => f.name === zoomName);
    out.fg_zoom_idx = idx;
    if (idx >= 0) {
      const loc = page.locator('#dfg .fr').nth(idx);
      await loc.hover();
      out.fg_tip = await page.$eval('#tip', (e) => e.textContent);
      await loc.click();
      out.fg_after = await frames();
      out.fg_path = await page.$eval('#dfg-path', (e) => ({ text: e.textContent, base: e.dataset.base, new: e.dataset.new }));
      await page.click('#dfg-reset');
    }
    await shot('diff-flame');
    await page.selectOption('#view-dflame select.dcost', '1'); /* allocations */
    out.fg_alloc = await frames();

    const rows = (id) => page.$$eval('#' + id + ' tbody tr.row', (trs) => trs.map((tr) =>
      [...tr.children].map((td) => (td.dataset.value !== undefined ? +td.dataset.value : td.textContent))));
    await page.click('#tabs button[data-view=dchanges]');
    out.changes_heads = await page.$$eval('#dchanges-table th', (ths) => ths.map((th) => th.textContent));
    out.changes = await rows('dchanges-table');
    await page.click('#dchanged-only');
    out.changes_all = await rows('dchanges-table');
    await page.click('#dchanges-table th:text-is("change")');
    out.changes_asc = await rows('dchanges-table');
    await page.locator('#dchanges-table tbody tr.row').first().click();
    out.changes_stack = await page.$eval('#dchanges-table tr.detail', (e) => e.textContent);
    await shot('diff-changes');
  } finally {
    out.errors = errors;
    out.requests = requests;
    process.stdout.write(JSON.stringify(out) + '\n');
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((e) => { console.error(e && e.stack || String(e)); process.exit(1); });
