#!/usr/bin/env node
/* html_blocks_check.cjs - set combinations of the HTML report's filters in
 * headless Chromium (playwright-core, offline) and print, as JSON on
 * stdout, the sites table under each, for tests/e2e/test_html.py:
 *   usage: node html_blocks_check.cjs FILE.html CASES.json
 * CASES.json: [{name, thread (a substring of the thread's label, or
 * null), leaked, temp, min_life_ms, alive_at_frac (of the run), window
 * ([first, last] bucket), mode (alloc, end, high)}]. Per case: each site's
 * leaf function -> [[value, 95% half width or null] per cost column], the
 * filter note, and the flame graph root's tooltip. Filters are set through
 * the page's own controls; the window through window.heaptrail.setWindow,
 * as a drag on the chart would. Needs NODE_PATH where playwright-core
 * resolves, and /usr/bin/chromium. */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
  const [htmlPath, casesPath] = process.argv.slice(2);
  const cases = JSON.parse(fs.readFileSync(casesPath, 'utf8'));
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ht-chromium.'));
  const errors = [], requests = [];
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1300, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const out = { results: {} };
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
    await page.goto('file://' + path.resolve(htmlPath), { waitUntil: 'load' });
    await page.waitForSelector('#sum-allocations');
    const span = await page.evaluate(() => window.heaptrail.data.timeline.span_seconds);
    const threads = await page.$$eval('#flt-thread option', (os) => os.map((o) => [o.value, o.textContent]));
    const setNum = async (id, v) => { await page.fill(id, v === null ? '' : String(v)); await page.dispatchEvent(id, 'change'); };
    for (const c of cases) {
      const th = c.thread ? threads.find((o) => o[1].includes(c.thread)) : ['-1'];
      await page.selectOption('#flt-thread', th ? th[0] : '-1');
      await page.setChecked('#flt-leaked', !!c.leaked);
      if (!await page.$eval('#flt-temp', (e) => e.disabled)) await page.setChecked('#flt-temp', !!c.temp);
      await setNum('#flt-min-life', c.min_life_ms === undefined ? null : c.min_life_ms);
      await setNum('#flt-alive-at', c.alive_at_frac === undefined ? null : c.alive_at_frac * span);
      await page.selectOption('#flt-winmode', c.mode || 'alloc');
      await page.evaluate((w) => window.heaptrail.setWindow(w), c.window || null);
      await page.click('#tabs button[data-view=sites]');
      const rows = await page.$$eval('#sites-table tbody tr.row', (trs) => trs.map((tr) =>
        [...tr.children].map((td) => (td.dataset.value !== undefined ? [+td.dataset.value, td.dataset.ci === undefined ? null : +td.dataset.ci, td.textContent] : td.textContent))));
      const bySite = {};
      for (const r of rows) bySite[r[0]] = r.slice(2);
      await page.click('#tabs button[data-view=flame]');
      const root = page.locator('#fg .fr.root');
      let tipText = null;
      if (await root.count()) { await root.first().hover(); tipText = await page.$eval('#tip', (e) => e.textContent); }
      out.results[c.name] = { rows: bySite, note: await page.$eval('#filter-note', (e) => e.textContent), tip: tipText };
    }
  } finally {
    out.errors = errors;
    out.requests = requests;
    process.stdout.write(JSON.stringify(out) + '\n');
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((e) => { console.error(e && e.stack || String(e)); process.exit(1); });
