#!/usr/bin/env node
/* html_screenshots.cjs - a PNG of each view of a heaptrail HTML report and
 * of a diff page, taken in headless Chromium (playwright-core, offline),
 * for the README (scripts/screenshots.sh runs it on the bundled example):
 *   usage: node html_screenshots.cjs REPORT.html DIFF.html OUTDIR
 * Writes OUTDIR/html-<view>.png, 1200 px wide, and prints the files with
 * any console error or network request as JSON; exits 1 on either. Needs
 * NODE_PATH where playwright-core resolves, and /usr/bin/chromium. */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const W = 1200, H = 720;

async function main() {
  const [reportPath, diffPath, outDir] = process.argv.slice(2);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ht-chromium.'));
  const errors = [], requests = [], files = [];
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: W, height: H },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') errors.push(m.type() + ': ' + m.text()); });
    const open = async (p) => {
      await page.unroute('**/*');
      await page.route('**/*', (r) => {
        const u = r.request().url();
        if (u === 'file://' + path.resolve(p)) return r.continue();
        requests.push(u);
        return r.abort();
      });
      await page.goto('file://' + path.resolve(p), { waitUntil: 'load' });
      await page.waitForFunction(() => document.documentElement.dataset.ready === '1');
    };
    /* the page down to the end of the view shown (and the tooltip) */
    const shot = async (name, keepTip) => {
      if (!keepTip) await page.mouse.move(0, 0);
      await page.evaluate(() => window.scrollTo(0, 0));
      const bottom = await page.evaluate(() => {
        let b = 0;
        for (const e of document.querySelectorAll('.view.on, section.on, #tip:not([hidden])')) b = Math.max(b, e.getBoundingClientRect().bottom);
        return b;
      });
      const f = path.join(outDir, 'html-' + name + '.png');
      await page.screenshot({ path: f, clip: { x: 0, y: 0, width: W, height: Math.max(320, Math.min(H, Math.ceil(bottom) + 16)) } });
      files.push(f);
    };
    /* open the tree rows of these names, one after another */
    const openRows = async (table, names) => {
      for (const n of names) {
        const r = page.locator('#' + table + ' tbody tr.row', { has: page.locator('td.name', { hasText: new RegExp('^\\W*' + n + '$') }) }).first();
        if (await r.count()) await r.click();
      }
    };
    const tab = (v) => page.click('#tabs button[data-view=' + v + ']');

    await open(reportPath);
    await shot('summary');
    await tab('time');
    const hit = await page.$('#chart-hit');
    const b = await hit.boundingBox();
    /* a window around the peak, as a drag */
    const pf = await page.evaluate(() => { const d = window.heaptrail.data; return d.totals.peak_time_seconds / (d.timeline.span_seconds || 1); });
    await page.mouse.move(b.x + b.width * Math.max(0, pf - 0.1), b.y + b.height / 2);
    await page.mouse.down();
    await page.mouse.move(b.x + b.width * Math.min(1, pf + 0.2), b.y + b.height / 2, { steps: 5 });
    await page.mouse.up();
    await shot('time');
    await page.click('#window-clear');
    await tab('flame');
    await page.fill('#fg-search', 'copy_name');
    const fr = page.locator('#fg .fr', { hasText: 'make_record' }).first();
    if (await fr.count()) await fr.hover();
    await shot('flame', true); /* with the tooltip */
    await page.fill('#fg-search', '');
    await tab('topdown');
    await openRows('topdown-table', ['__libc_start_main_impl', '__libc_start_call_main', 'main', 'make_record']);
    await shot('topdown');
    await tab('bottomup');
    await openRows('bottomup-table', ['make_record', 'copy_name', 'checksum']);
    await shot('bottomup');
    await tab('callers');
    await page.fill('#cc-search', 'make_record');
    const r = page.locator('#cc-functions-table tbody tr.row').first();
    if (await r.count()) await r.click();
    await page.fill('#cc-search', '');
    await shot('callers');
    await tab('leaks');
    const lr = page.locator('#leaks tbody tr.row').first();
    if (await lr.count()) await lr.click();
    await shot('leaks');
    await tab('sizes');
    await shot('sizes');

    await open(diffPath);
    await page.click('#tabs button[data-view=dchanges]');
    await page.uncheck('#dchanged-only');
    await shot('diff');
  } finally {
    process.stdout.write(JSON.stringify({ files, errors, requests }) + '\n');
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  if (errors.length || requests.length) process.exit(1);
}

main().catch((e) => { console.error(e && e.stack || String(e)); process.exit(1); });
