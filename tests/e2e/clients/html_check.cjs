#!/usr/bin/env node
/* html_check.cjs - open a heaptrail HTML report in headless Chromium
 * (playwright-core, offline) and report what its views show as JSON on
 * stdout, for tests/e2e/test_html.py:
 *   usage: node html_check.cjs FILE.html SHOTDIR ZOOM SEARCH
 * It reads the summary, clicks the flame-graph frame named ZOOM, types
 * SEARCH into the search box, sorts the sites table, drags a time window
 * over the first half of the chart, and records what changed after each
 * step; SHOTDIR (or "") gets a screenshot of each view. The checks on the
 * numbers live in the Python test. Needs NODE_PATH where playwright-core
 * resolves, and /usr/bin/chromium. */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
  const [htmlPath, shotDir, zoomName, term] = process.argv.slice(2);
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
    /* no network: any request but the file itself is recorded and refused */
    await page.route('**/*', (r) => {
      const u = r.request().url();
      if (u === 'file://' + path.resolve(htmlPath)) return r.continue();
      requests.push(u);
      return r.abort();
    });
    const shot = async (name) => { if (shotDir) await page.screenshot({ path: path.join(shotDir, name + '.png'), fullPage: false }); };
    const t0 = Date.now();
    await page.goto('file://' + path.resolve(htmlPath), { waitUntil: 'load' });
    await page.waitForSelector('#sum-allocations');
    out.load_ms = Date.now() - t0;
    out.title = await page.title();

    if (process.env.HT_THREADS_ONLY) { /* the sites table under each thread of the filter */
      out.threads = {};
      const opts = await page.$$eval('#flt-thread option', (os) => os.map((o) => [o.value, o.textContent]));
      await page.click('#tabs button[data-view=sites]');
      for (const [v, label] of opts) {
        await page.selectOption('#flt-thread', v);
        out.threads[label] = await page.$$eval('#sites-table tbody tr.row', (trs) => trs.map((tr) =>
          [...tr.children].map((td) => (td.dataset.value !== undefined ? +td.dataset.value : td.textContent))));
      }
      return;
    }
    /* summary: every figure with its exact value */
    out.summary = await page.$$eval('td[id^=sum-]', (tds) => Object.fromEntries(tds.map((td) =>
      [td.id.slice(4), { text: td.textContent, value: td.dataset.value === undefined ? null : td.dataset.value }])));
    out.notes = await page.$$eval('#notes .note', (ns) => ns.map((n) => n.textContent));
    await shot('summary');

    /* the flame graph: frames as drawn (names from the page's own nodes) */
    const frames = () => page.$$eval('#fg .fr', (es) => es.map((e) => ({
      name: e._node.name, text: e.textContent, value: +e.dataset.value, depth: +e.dataset.depth,
      width: e.getBoundingClientRect().width, anc: e.classList.contains('anc'), match: e.classList.contains('match'),
    })));
    await page.click('#tabs button[data-view=flame]');
    out.fg_width = await page.$eval('#fg', (e) => e.clientWidth);
    out.fg_before = await frames();
    const idx = out.fg_before.findIndex((f) => f.name === zoomName);
    out.fg_zoom_idx = idx;
    if (idx >= 0) {
      const loc = page.locator('#fg .fr').nth(idx);
      await loc.hover();
      out.fg_tip = await page.$eval('#tip', (e) => e.textContent);
      await loc.click();
      out.fg_after = await frames();
      out.fg_path = await page.$eval('#fg-path', (e) => ({ text: e.textContent, value: e.dataset.value }));
      await shot('flame-zoom');
      await page.click('#fg-reset');
    }
    await page.fill('#fg-search', term);
    out.fg_match = await page.$eval('#fg-match', (e) => ({ text: e.textContent, value: e.dataset.value }));
    out.fg_searched = await frames();
    await shot('flame-search');
    await page.fill('#fg-search', '');
    await page.selectOption('#fg-cost', '1'); /* allocations */
    out.fg_alloc_root = (await frames()).filter((f) => f.depth === 0).map((f) => f.value);

    /* the sites table, as drawn and sorted by allocations */
    const rows = (id) => page.$$eval('#' + id + ' tbody tr.row', (trs) => trs.map((tr) =>
      [...tr.children].map((td) => (td.dataset.value !== undefined ? +td.dataset.value : td.textContent))));
    const heads = (id) => page.$$eval('#' + id + ' th', (ths) => ths.map((th) => th.textContent));
    await page.click('#tabs button[data-view=sites]');
    out.sites_heads = await heads('sites-table');
    out.sites_rows = await rows('sites-table');
    await page.click('#sites-table th:has-text("allocations")');
    out.sites_by_allocs = await rows('sites-table');
    await page.click('#sites-table th:has-text("allocations")');
    out.sites_by_allocs_asc = await rows('sites-table');
    await page.locator('#sites-table tbody tr.row').first().click();
    out.sites_stack = await page.$eval('#sites-table tr.detail', (e) => e.textContent);
    await shot('sites');

    /* the trees */
    await page.click('#tabs button[data-view=topdown]');
    out.topdown_heads = await heads('topdown-table');
    out.topdown = await rows('topdown-table');
    await shot('topdown');
    await page.click('#tabs button[data-view=bottomup]');
    out.bottomup = await rows('bottomup-table');

    /* leaks, sizes and temporaries */
    await page.click('#tabs button[data-view=leaks]');
    out.leak_titles = await page.$$eval('#leaks h2', (hs) => hs.map((h) => h.textContent));
    out.leaks_definite = await rows('leaks-table-1').catch(() => null);
    await shot('leaks');
    await page.click('#tabs button[data-view=sizes]');
    out.sizes = await page.$$eval('#sizes-table tbody tr', (trs) => trs.map((tr) =>
      [+tr.dataset.k, +tr.children[1].dataset.value, +tr.children[2].dataset.value]));
    out.temps = await rows('temps-table').catch(() => null);
    await shot('sizes');

    /* a time window over the first half of the run */
    await page.click('#tabs button[data-view=time]');
    await shot('time');
    const hit = await page.$('#chart-hit');
    const b = hit && await hit.boundingBox();
    if (b) {
    await page.mouse.move(b.x + 1, b.y + b.height / 2);
    await page.mouse.down();
    await page.mouse.move(b.x + b.width / 4, b.y + b.height / 2, { steps: 4 });
    await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2, { steps: 4 });
    await page.mouse.up();
    out.window = await page.$$eval('td[id^=win-]', (tds) => Object.fromEntries(tds.map((td) => [td.id.slice(4), +td.dataset.value])));
    await shot('time-window');
    await page.click('#tabs button[data-view=sites]');
    out.sites_window = await rows('sites-table');
    await page.click('#window-clear');
    out.sites_cleared = await rows('sites-table');
    }

    /* caller/callee: main, then leak_a found by the search */
    await page.click('#tabs button[data-view=callers]');
    const ccPick = async (name) => {
      await page.fill('#cc-search', name);
      const r = page.locator('#cc-functions-table tbody tr.row').filter({ has: page.locator('td.name', { hasText: new RegExp('^\\s*' + name + '$') }) });
      if (await r.count() === 0) return null; /* a sampled trace may lack it */
      await r.first().click();
      return {
        name: await page.$eval('#cc-name', (e) => e.textContent).catch(() => null),
        total: await page.$eval('#cc-total', (e) => +e.dataset.value).catch(() => null),
        self: await page.$eval('#cc-self', (e) => +e.dataset.value).catch(() => null),
        callers: await rows('cc-callers-table'),
        callees: await rows('cc-callees-table'),
      };
    };
    out.cc_main = await ccPick('main');
    await shot('callers');
    out.cc_leak_a = await ccPick('leak_a');

    /* the top sites stacked in the chart */
    await page.click('#tabs button[data-view=time]');
    out.stacked = await page.$$eval('#chart path.stacked', (ps) => ps.map((p) => {
      const i = +p.dataset.site, S = window.heaptrail.data.sites, F = window.heaptrail.data.frames, N = window.heaptrail.data.nodes;
      const n = S[i][0];
      return [n >= 0 ? F[N[2 * n + 1]][0] : '?', +p.dataset.max];
    }));
    /* the window modes over the whole run, then the first half */
    const drag = async (from, to) => {
      const h = await page.$('#chart-hit');
      const bb = await h.boundingBox();
      await page.mouse.move(bb.x + bb.width * from + 1, bb.y + bb.height / 2);
      await page.mouse.down();
      await page.mouse.move(bb.x + bb.width * (from + to) / 2, bb.y + bb.height / 2, { steps: 4 });
      await page.mouse.move(bb.x + bb.width * to - 1, bb.y + bb.height / 2, { steps: 4 });
      await page.mouse.up();
    };
    const sitesNow = async () => { await page.click('#tabs button[data-view=sites]'); const r = await rows('sites-table'); await page.click('#tabs button[data-view=time]'); return r; };
    out.modes = {};
    if (await page.$('#chart-hit')) {
      await drag(0, 1);
      for (const m of ['alloc', 'end', 'high']) {
        await page.selectOption('#flt-winmode', m);
        out.modes[m] = await sitesNow();
      }
      await shot('time-stacked');
      await page.click('#tabs button[data-view=time]');
      await drag(0, 0.5);
      out.modes.high_first_half = await sitesNow();
      await page.selectOption('#flt-winmode', 'alloc');
      await page.click('#window-clear');
    }

    /* filters, one at a time, on the sites table (and the flame graph, leaks) */
    out.filters = {};
    const siteRows = async () => { await page.click('#tabs button[data-view=sites]'); return rows('sites-table'); };
    if (await page.$('#flt-leaked')) { /* not in a summary trace's page */
    await page.click('#tabs button[data-view=sites]'); /* the chart drawn before, filtered while hidden */
    await page.check('#flt-leaked');
    out.filters.leaked = await siteRows();
    await page.click('#tabs button[data-view=flame]');
    await page.selectOption('#fg-cost', '0');
    out.filters.leaked_root = (await frames()).filter((f) => f.depth === 0).map((f) => f.value);
    await page.click('#tabs button[data-view=time]');
    out.filters.leaked_stacked = await page.$$eval('#chart path.stacked', (ps) => ps.map((p) => +p.dataset.max));
    await page.uncheck('#flt-leaked');
    await page.fill('#flt-min-life', '20');
    await page.dispatchEvent('#flt-min-life', 'change');
    out.filters.min_life = await siteRows();
    await page.fill('#flt-min-life', '');
    await page.dispatchEvent('#flt-min-life', 'change');
    const span = await page.evaluate(() => window.heaptrail.data.timeline.span_seconds);
    await page.fill('#flt-alive-at', String(span));
    await page.dispatchEvent('#flt-alive-at', 'change');
    out.filters.alive_end = await siteRows();
    await page.fill('#flt-alive-at', String(span / 4));
    await page.dispatchEvent('#flt-alive-at', 'change');
    out.filters.alive_quarter = await siteRows();
    await page.fill('#flt-alive-at', '');
    await page.dispatchEvent('#flt-alive-at', 'change');
    await page.fill('#flt-fn', 'leak_');
    await page.dispatchEvent('#flt-fn', 'change');
    out.filters.through = await siteRows();
    await page.selectOption('#flt-exclude', '1');
    out.filters.not_through = await siteRows();
    await page.selectOption('#flt-exclude', '0');
    await page.fill('#flt-fn', 'leak_a');
    await page.dispatchEvent('#flt-fn', 'change');
    await page.click('#tabs button[data-view=leaks]');
    out.filters.leak_a_titles = await page.$$eval('#leaks h2', (hs) => hs.map((h) => h.textContent));
    await page.fill('#flt-fn', '');
    await page.dispatchEvent('#flt-fn', 'change');
    await page.selectOption('#flt-thread', '0');
    out.filters.thread = await siteRows();
    out.filters.thread_note = await page.$eval('#filter-note', (e) => e.textContent);
    await page.selectOption('#flt-thread', '-1');
    out.filters.modules = await page.$$eval('#flt-module option', (os) => os.map((o) => o.value));
    await page.selectOption('#flt-module', 'html_report');
    out.filters.module = await siteRows();
    await page.selectOption('#flt-module', '');
    out.filters.none = await siteRows();
    out.filters.note_cleared = await page.$eval('#filter-note', (e) => e.textContent);
    }

    /* what the page holds: no markup from a name */
    out.pwned = await page.evaluate(() => window.__pwned === undefined ? null : String(window.__pwned));
    out.imgs = await page.$$eval('img', (es) => es.length);
    out.scripts = await page.$$eval('script', (es) => es.map((e) => e.type || 'classic'));
    out.body_text_has = await page.evaluate((names) => names.map((n) => document.body.innerText.includes(n)), [zoomName]);
    out.names = await page.evaluate(() => window.heaptrail.data.frames.map((f) => f[0]));
  } finally {
    out.errors = errors;
    out.requests = requests;
    process.stdout.write(JSON.stringify(out) + '\n');
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

main().catch((e) => { console.error(e && e.stack || String(e)); process.exit(1); });
