/* report.js - the views of heaptrail's HTML report (report/html.c writes
 * the data, as JSON in the element #ht-data):
 *   frames  [function, file, line (0: unknown), module, address, and for
 *           a frame without a function its label, module+offset]
 *   nodes   flat pairs (parent + 1 (0: outermost caller), frame): the
 *           stacks as a tree; a site points at the node of its leaf
 *   sites   [node, allocations, bytes, peak bytes, leaked blocks, leaked
 *           bytes, temporary (null: unknown), frees, largest], and in a
 *           sampled trace the half widths of the 95% intervals of
 *           allocations, bytes, peak bytes, leaked blocks, leaked bytes
 *   timeline.buckets  [start s, end s, heap at end, highest heap, RSS (0:
 *           none yet), allocations, bytes allocated, frees]; peak: the
 *           bucket of the global peak
 *   blocks  every block summed by site, thread, birth and death buckets,
 *           lifetime class and flags (analysis/blocks.h), packed (below)
 *   sizes   [k, allocations, bytes]: size 0 (k = -1), or [2^k, 2^(k+1))
 *   leaks.groups  [class (0 unclassified, 1 definite .. 4 reachable),
 *           site, blocks, bytes]
 * Every string of the trace reaches the page through textContent (el()
 * and text nodes), never as markup. */
'use strict';
(function () {
  const D = JSON.parse(document.getElementById('ht-data').textContent);
  const $ = (id) => document.getElementById(id);
  const PAGE = 300; /* table rows drawn at a time */
  const tip = $('tip');
  const S = D.sites, F = D.frames, N = D.nodes, T = D.totals;
  const sampled = !!D.sampled, summary = D.summary_mode;

  /* ---- helpers ---- */
  function el(tag, props, ...kids) {
    const e = document.createElement(tag);
    if (props) for (const k in props) {
      if (k === 'class') e.className = props[k];
      else if (k === 'text') e.textContent = props[k];
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), props[k]);
      else e.setAttribute(k, props[k]);
    }
    for (const c of kids) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  /* the SVG namespace, from an <svg> the HTML parser made (no URL in the page) */
  const svgNS = $('svg-ns').namespaceURI;
  function sv(tag, attrs) {
    const e = document.createElementNS(svgNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function count(v) {
    if (v === null || v === undefined) return '?';
    return Math.round(v).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }
  /* as ht_fmt_size: three significant digits */
  function size(b) {
    if (b === null || b === undefined) return '?';
    if (b < 1024) return Math.round(b) + ' B';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
    let v = b, i = 0;
    while (v >= 1024 && i < 6) { v /= 1024; i++; }
    return (v < 9.995 ? v.toFixed(2) : v < 99.95 ? v.toFixed(1) : v.toFixed(0)) + ' ' + u[i];
  }
  function secs(s) {
    if (s >= 1) return s.toFixed(3) + ' s';
    if (s >= 1e-3) return (s * 1e3).toFixed(1) + ' ms';
    return Math.round(s * 1e6) + ' us';
  }
  const pct = (v, tot) => (tot ? (100 * v / tot).toFixed(1) : '0.0') + '%';
  const base = (p) => (p ? p.slice(p.lastIndexOf('/') + 1) : '');
  function fname(f) {
    const r = F[f];
    return r[0] !== null ? r[0] : r[5] || r[4];
  }
  /* each frame's function name once, and a number per distinct name that
   * keys the trees' children (cheaper than the string, with 100k sites) */
  const FNAME = F.map((_, f) => fname(f)), FKEY = new Int32Array(F.length);
  (function () {
    const ids = new Map();
    FNAME.forEach((nm, f) => { let id = ids.get(nm); if (id === undefined) ids.set(nm, (id = ids.size)); FKEY[f] = id; });
  })();
  function floc(f) {
    const r = F[f];
    if (r[1] !== null) return r[1] + (r[2] ? ':' + r[2] : '');
    return r[3] !== null ? r[3] : '';
  }
  /* a site's frames, leaf first */
  function siteFrames(i) {
    const out = [];
    for (let n = S[i][0]; n >= 0; n = N[2 * n] - 1) out.push(N[2 * n + 1]);
    return out;
  }
  function stackDiv(i) {
    const d = el('div', { class: 'stack' });
    for (const f of siteFrames(i)) d.append(el('div', null, fname(f), ' ', el('span', { class: 'loc', text: floc(f) })));
    return d;
  }

  if (D.heaptrail_html_diff) { diffPage(); return; }

  /* ---- costs and the time window ---- */
  const COSTS = [
    { key: 'bytes', label: 'bytes allocated', col: 2, bytes: true },
    { key: 'allocations', label: 'allocations', col: 1 },
    { key: 'peak', label: 'peak bytes', col: 3, bytes: true },
    { key: 'leaked', label: 'bytes in use at exit', col: 5, bytes: true },
    { key: 'temporary', label: 'temporary allocations', col: 6 },
  ];
  const tempKnown = T.temporary_allocations !== null;
  let win = null; /* [first bucket, last bucket] */
  /* ---- filters shared by every view, and the time window's modes ----
   * Every view reads a site's costs from V (recompute() fills it): a site
   * left out by a filter counts 0 and IN[i] is 0. The filters combine per
   * block: with any of the per-block ones (a thread, only leaked, only
   * temporaries, alive at T, alive for at least D, the window) a site
   * counts the rows of the block table that pass them all; the module and
   * function filters keep or drop whole sites (a site is one stack). In a
   * sampled trace VV holds the variances of the same sums. */
  const B0 = D.timeline.buckets, NB = B0.length, PEAK = D.timeline.peak;
  /* the block table (report/html.c, put_rows): per row its site, thread,
   * birth and death buckets (died == NB: live at the end), lifetime class
   * (0 ns, then [2^(k-1), 2^k) ns), flags (1 temporary, 2 live at the high
   * of its birth's bucket, 4 at the high of its death's), blocks, bytes
   * and, sampled, their variances; rows of a site are consecutive */
  const BK = D.blocks || { rows: 0, variances: false, packed: '' }, NR = BK.rows;
  const rSite = new Uint32Array(NR), rThread = new Uint32Array(NR), rBorn = new Uint16Array(NR), rDied = new Uint16Array(NR);
  const rLife = new Uint8Array(NR), rFlags = new Uint8Array(NR), rN = new Float64Array(NR), rB = new Float64Array(NR);
  const rVN = new Float64Array(BK.variances ? NR : 0), rVB = new Float64Array(BK.variances ? NR : 0);
  const siteRows = new Int32Array(S.length + 1); /* site i: rows [siteRows[i], siteRows[i + 1]) */
  (function unpack() {
    const bin = atob(BK.packed || '');
    let p = 0, site = 0, thread = 0;
    const vi = () => { let v = 0, m = 1, c; do { c = bin.charCodeAt(p++); v += (c & 127) * m; m *= 128; } while (c & 128); return v; };
    for (let i = 0; i < NR; i++) {
      const h = bin.charCodeAt(p++);
      if (h & 64) site += vi();
      if (h & 32) thread = vi();
      rSite[i] = site; rThread[i] = thread; rFlags[i] = h & 7;
      const b = vi();
      rBorn[i] = b;
      rDied[i] = h & 8 ? b + vi() : b;
      rLife[i] = vi();
      rN[i] = h & 16 ? vi() : 1;
      rB[i] = vi();
      if (BK.variances) { rVN[i] = vi(); rVB[i] = vi(); }
      siteRows[site + 1]++;
    }
    for (let i = 0; i < S.length; i++) siteRows[i + 1] += siteRows[i];
  })();
  /* row j was live at the high of bucket h (the global peak: h = PEAK) */
  function atHigh(j, h) {
    const a = rBorn[j], f = rDied[j];
    if (a === h) return (rFlags[j] & 2) !== 0;
    return a < h && (h < f || (h === f && (rFlags[j] & 4) !== 0));
  }
  const FL = { thread: -1, module: '', fn: '', exclude: false, leaked: false, temp: false, aliveAt: null, minLife: null };
  let winMode = 'alloc'; /* allocated in the window, live at its end, at its high-water mark */
  const V = new Float64Array(S.length * 5), VV = new Float64Array(S.length * 5), IN = new Uint8Array(S.length);
  const RP = new Uint8Array(NR); /* rows the per-block filters but the window keep */
  let perBlock = false;
  const bucketOfTime = (s) => Math.max(0, Math.min(NB - 1, Math.floor(s / (D.timeline.span_seconds || 1e-9) * NB)));
  function passes(i) { /* the module and function filters: frames of its stack */
    if (!FL.module && !FL.fn) return true;
    let modOk = !FL.module, fnHit = false;
    const t = FL.fn.toLowerCase();
    for (let n = S[i][0]; n >= 0; n = N[2 * n] - 1) {
      const f = N[2 * n + 1];
      if (FL.module && F[f][3] !== null && base(F[f][3]) === FL.module) modOk = true;
      if (t && (fname(f).toLowerCase().includes(t) || floc(f).toLowerCase().includes(t))) fnHit = true;
    }
    return modOk && (!t || fnHit !== FL.exclude);
  }
  const sq = (ci) => (ci ? (ci / 1.96) ** 2 : 0);
  function recompute() {
    perBlock = !!win || FL.thread >= 0 || FL.leaked || FL.temp || FL.aliveAt !== null || FL.minLife !== null;
    let hb = -1, hbEnd = false;
    if (win && winMode === 'high') {
      let best = -1;
      for (let t = win[0]; t <= win[1]; t++) if (B0[t][3] > best) { best = B0[t][3]; hb = t; }
      if (win[0] > 0 && B0[win[0] - 1][2] > best) { hb = win[0] - 1; hbEnd = true; }
    }
    const aliveB = FL.aliveAt === null ? -1 : bucketOfTime(FL.aliveAt);
    /* lifetime class k holds [2^(k-1), 2^k) ns: the first class wholly >= D */
    const dns = FL.minLife === null ? 0 : FL.minLife * 1e9;
    const minK = dns <= 0 ? 0 : Math.ceil(Math.log2(dns)) + 1;
    V.fill(0);
    VV.fill(0);
    for (let i = 0; i < S.length; i++) {
      const r = S[i];
      IN[i] = passes(i) ? 1 : 0;
      if (!perBlock) {
        for (let j = siteRows[i]; j < siteRows[i + 1]; j++) RP[j] = IN[i];
        if (!IN[i]) continue;
        V[i * 5] = r[2]; V[i * 5 + 1] = r[1]; V[i * 5 + 2] = r[3]; V[i * 5 + 3] = r[5]; V[i * 5 + 4] = r[6] !== null ? r[6] : 0;
        if (sampled) { VV[i * 5] = sq(r[10]); VV[i * 5 + 1] = sq(r[9]); VV[i * 5 + 2] = sq(r[11]); VV[i * 5 + 3] = sq(r[13]); }
        continue;
      }
      let any = false;
      for (let j = siteRows[i]; j < siteRows[i + 1]; j++) {
        const a = rBorn[j], f = rDied[j];
        let ok = IN[i] && (FL.thread < 0 || rThread[j] === FL.thread) && (!FL.leaked || f === NB) &&
          (!FL.temp || (rFlags[j] & 1) !== 0) && (aliveB < 0 || (a <= aliveB && aliveB < f)) && rLife[j] >= minK;
        RP[j] = ok ? 1 : 0;
        if (ok && win) {
          if (winMode === 'alloc') ok = a >= win[0] && a <= win[1];
          else if (winMode === 'end') ok = a <= win[1] && win[1] < f;
          else ok = hbEnd ? a <= hb && hb < f : atHigh(j, hb);
        }
        if (!ok) continue;
        any = true;
        const k = i * 5, pk = atHigh(j, PEAK), lk = f === NB;
        V[k] += rB[j]; V[k + 1] += rN[j];
        if (pk) V[k + 2] += rB[j];
        if (lk) V[k + 3] += rB[j];
        if (rFlags[j] & 1) V[k + 4] += rN[j];
        if (BK.variances) {
          VV[k] += rVB[j]; VV[k + 1] += rVN[j];
          if (pk) VV[k + 2] += rVB[j];
          if (lk) VV[k + 3] += rVB[j];
        }
      }
      if (!any) IN[i] = 0;
    }
    if (!tempKnown) for (let i = 0; i < S.length; i++) V[i * 5 + 4] = 0;
    const lab = win ? { alloc: ['bytes allocated in the window', 'allocations in the window'], end: ['bytes live at the window end', 'blocks live at the window end'], high: ['bytes live at the high-water mark', 'blocks live at the high-water mark'] }[winMode]
      : aliveB >= 0 ? ['bytes live at T', 'blocks live at T'] : FL.minLife !== null ? ['bytes in blocks alive \u2265 D', 'blocks alive \u2265 D']
        : FL.leaked ? ['bytes never freed', 'blocks never freed'] : FL.temp ? ['bytes in temporaries', 'temporary allocations'] : ['bytes allocated', 'allocations'];
    COSTS[0].label = lab[0];
    COSTS[1].label = lab[1];
    for (const o of document.querySelectorAll('#fg-cost option, #cc-cost option')) if (+o.value < 2) o.textContent = COSTS[+o.value].label;
    filterNote();
  }
  /* a site's series over the buckets, from the rows RP keeps: bytes live
   * at each bucket's end and at its high */
  function siteSeries(i) {
    const live = new Float64Array(NB + 1), span = new Float64Array(NB + 1), high = new Float64Array(NB);
    for (let j = siteRows[i]; j < siteRows[i + 1]; j++) {
      if (!RP[j]) continue;
      const a = rBorn[j], f = rDied[j], b = rB[j];
      live[a] += b; live[f] -= b;
      if (a + 1 < f) { span[a + 1] += b; span[f] -= b; }
      if (rFlags[j] & 2) high[a] += b;
      else if (f < NB && f > a && (rFlags[j] & 4)) high[f] += b;
    }
    let l = 0, s = 0;
    for (let t = 0; t < NB; t++) { l += live[t]; s += span[t]; live[t] = l; high[t] += s; }
    return { live, high };
  }
  function siteVal(i, c) { return V[i * 5 + c]; }
  const STACKED = 8; /* sites stacked in the chart */
  const PALETTE = ['#e6194b', '#3cb44b', '#f58231', '#911eb4', '#42d4f4', '#f032e6', '#bfef45', '#9a6324'];
  function fmtCost(c, v) { return COSTS[c].bytes ? count(v) + ' B' : count(v); }
  function shortCost(c, v) { return COSTS[c].bytes ? size(v) : count(v); }

  /* ---- trees of functions (top-down from the outermost caller, or
   * bottom-up from the allocating function) with all costs ---- */
  function newNode(f, parent) {
    /* plain arrays: a trace of 100k sites makes half a million nodes, and
     * a typed array each costs several times as much to make */
    return { f, name: f < 0 ? 'all' : FNAME[f], v: [0, 0, 0, 0, 0], vv: [0, 0, 0, 0, 0], s: [0, 0, 0, 0, 0], kids: new Map(), parent, sites: 0 };
  }
  function buildTree(inverted) {
    const root = newNode(-1, null);
    const memo = new Array(N.length / 2);
    const vals = new Float64Array(5), vars = new Float64Array(5);
    function tnode(n) { /* top-down: the tree node of stack node n */
      if (memo[n]) return memo[n];
      const p = N[2 * n] - 1, f = N[2 * n + 1];
      const par = p < 0 ? root : tnode(p), key = FKEY[f];
      let c = par.kids.get(key);
      if (!c) { c = newNode(f, par); par.kids.set(key, c); }
      return (memo[n] = c);
    }
    for (let i = 0; i < S.length; i++) {
      let any = false;
      for (let c = 0; c < 5; c++) { any = (vals[c] = siteVal(i, c)) || any; vars[c] = VV[i * 5 + c]; }
      if (!any) continue;
      let leaf;
      if (!inverted) {
        leaf = tnode(S[i][0]);
        for (let x = leaf; x; x = x.parent) { for (let c = 0; c < 5; c++) { x.v[c] += vals[c]; x.vv[c] += vars[c]; } x.sites++; }
      } else {
        let cur = root;
        for (let c = 0; c < 5; c++) { root.v[c] += vals[c]; root.vv[c] += vars[c]; }
        root.sites++;
        for (let n = S[i][0]; n >= 0; n = N[2 * n] - 1) {
          const f = N[2 * n + 1], key = FKEY[f];
          let k = cur.kids.get(key);
          if (!k) { k = newNode(f, cur); cur.kids.set(key, k); }
          for (let c = 0; c < 5; c++) { k.v[c] += vals[c]; k.vv[c] += vars[c]; }
          k.sites++;
          cur = k;
        }
        leaf = cur;
      }
      for (let c = 0; c < 5; c++) leaf.s[c] += vals[c];
    }
    return root;
  }
  const trees = {};
  function tree(kind) { return trees[kind] || (trees[kind] = buildTree(kind === 'bottomup')); }

  /* ---- tabs ---- */
  const drawn = {};
  const draw = {};
  let current = 'summary';
  function show(view) {
    current = view;
    for (const b of document.querySelectorAll('#tabs button')) b.classList.toggle('on', b.dataset.view === view);
    for (const s of document.querySelectorAll('.view')) s.classList.toggle('on', s.id === 'view-' + view);
    if (!drawn[view] && draw[view]) { drawn[view] = true; draw[view](); }
  }
  for (const b of document.querySelectorAll('#tabs button')) b.addEventListener('click', () => show(b.dataset.view));
  function redrawAll() { /* the window changed */
    for (const k in trees) delete trees[k];
    for (const k in drawn) drawn[k] = false;
    drawn.summary = drawn.time = true;
    if (draw[current]) { drawn[current] = true; draw[current](); }
  }

  /* ---- summary ---- */
  function kv(table, label, value, id, num) {
    const td = el('td', { class: 'num' }, value);
    if (id) { td.id = id; if (num !== undefined && num !== null) td.dataset.value = String(num); }
    table.append(el('tr', null, el('td', { text: label }), td));
    return td;
  }
  function ci(key) {
    const v = T[key + '_ci95'];
    return sampled && v !== undefined ? ' \u00b1 ' + count(v) : '';
  }
  function ending(p) {
    switch (p.ending) {
      case 'exit': case '_exit': return (p.ending === '_exit' ? 'called _exit' : 'exited') + (p.exit_code === null ? '' : ' with status ' + p.exit_code);
      case 'signal': return 'killed by signal ' + p.signal;
      case 'exec': return 'replaced by exec of ' + (p.exec || '?');
      case 'detach': return 'detached (the agent stopped recording)';
      case 'cut_short': return 'cut short: the trace ends without its end record';
    }
    return 'unknown';
  }
  function quoteArg(a) { return /^[A-Za-z0-9_\-.,/:=+@%]+$/.test(a) ? a : "'" + a.replace(/'/g, "'\\''") + "'"; }
  draw.summary = function () {
    const p = D.program;
    $('title').textContent = p.command.length ? base(p.command[0]) : '';
    document.title = 'heaptrail: ' + (p.command.length ? base(p.command[0]) : 'report');
    const pt = $('program');
    kv(pt, 'command', p.command.map(quoteArg).join(' '), 'sum-command');
    if (p.executable) kv(pt, 'executable', p.executable);
    kv(pt, 'pid', String(p.pid) + (p.forked ? ' (a forked child)' : ''));
    kv(pt, 'ended', ending(p), 'sum-ending');
    if (D.trace) kv(pt, 'trace', D.trace);
    kv(pt, 'duration', secs(T.duration_seconds), 'sum-duration', T.duration_seconds);
    const t = $('totals');
    kv(t, 'allocations', count(T.allocations) + ci('allocations') + (T.duration_seconds ? '   (' + count(T.allocations_per_second) + ' per second)' : ''), 'sum-allocations', T.allocations);
    kv(t, 'frees', count(T.frees), 'sum-frees', T.frees);
    kv(t, 'bytes allocated', size(T.bytes_allocated) + '   ' + count(T.bytes_allocated) + ' B' + ci('bytes_allocated'), 'sum-bytes', T.bytes_allocated);
    kv(t, 'peak heap', size(T.peak_heap_bytes) + '   ' + count(T.peak_heap_bytes) + ' B at ' + secs(T.peak_time_seconds) + ci('peak_heap_bytes'), 'sum-peak', T.peak_heap_bytes);
    kv(t, 'peak RSS', T.peak_rss_bytes === null ? 'unknown' : size(T.peak_rss_bytes) + '   ' + count(T.peak_rss_bytes) + ' B', 'sum-rss', T.peak_rss_bytes);
    kv(t, p.ending === 'exec' ? 'in use at exec' : 'in use at exit', size(T.leaked_bytes) + '   ' + count(T.leaked_bytes) + ' B' + ci('leaked_bytes') + ' in ' + count(T.leaked_blocks) + (T.leaked_blocks === 1 ? ' block' : ' blocks'), 'sum-leaked', T.leaked_bytes);
    kv(t, 'temporary allocs', !tempKnown ? (sampled ? '? not known from samples' : '? not known in summary mode')
      : count(T.temporary_allocations) + (T.allocations ? '   ' + pct(T.temporary_allocations, T.allocations) + ' of allocations' : ''), 'sum-temporary', T.temporary_allocations);
    kv(t, 'sites', count(T.sites), 'sum-sites', T.sites);
    const lt = $('leak-totals');
    const classes = [['definite', 'definitely lost'], ['indirect', 'indirectly lost'], ['possible', 'possibly lost'], ['reachable', 'still reachable'], ['unclassified', 'unclassified'], ['suppressed', 'suppressed']];
    for (const [k, label] of classes) {
      const b = T[k + '_bytes'], n = T[k + '_blocks'];
      if (k === 'unclassified' && !n) continue;
      kv(lt, label, count(b) + ' B in ' + count(n) + (n === 1 ? ' block' : ' blocks'), 'sum-' + k, b);
    }
    const notes = $('notes');
    if (sampled) notes.append(el('div', { class: 'note', text: 'A sampled trace (one sample per ' + count(D.sampled.rate) + ' bytes on average): figures are estimates, shown with the half width of their 95% interval (\u00b1); temporary allocations are not known.' }));
    if (summary) notes.append(el('div', { class: 'note', text: 'A summary trace (heaptrail run --summary): it holds totals per site, not events, so memory over time, the time window, the size histogram and temporary allocations are missing.' }));
    const w = $('warnings');
    const warns = (D.error ? [D.error] : []).concat(D.warnings);
    if (warns.length) {
      w.append(el('h2', { text: 'Warnings' }));
      for (const x of warns) w.append(el('div', { class: 'warn', text: x }));
    }
  };

  /* ---- memory over time ---- */
  draw.time = function () {
    const tl = D.timeline, B = tl.buckets, box = $('chart');
    box.textContent = '';
    if (summary || !B.length) { box.append(el('p', { class: 'note', text: 'No events in this trace: nothing over time.' })); return; }
    const W = Math.max(600, Math.min(1400, box.clientWidth || 1100)), H = 300, L = 80, R = 80, TOP = 16, BOT = 34;
    const span = tl.span_seconds || 1e-9;
    let ymax = 1, rmax = 0;
    for (const b of B) { ymax = Math.max(ymax, b[3], b[2]); rmax = Math.max(rmax, b[4]); }
    const x = (s) => L + (W - L - R) * s / span, y = (v) => TOP + (H - TOP - BOT) * (1 - v / ymax);
    const yr = (v) => TOP + (H - TOP - BOT) * (1 - v / (rmax || 1));
    const g = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, id: 'chart-svg' });
    for (let k = 0; k <= 4; k++) {
      const v = ymax * k / 4;
      g.append(sv('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: '#eceff4' }));
      const lab = sv('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#5b6475' });
      lab.textContent = size(v);
      g.append(lab);
      if (rmax) {
        const r = sv('text', { x: W - R + 6, y: yr(rmax * k / 4) + 4, 'font-size': 11, fill: '#9a6a00' });
        r.textContent = size(rmax * k / 4);
        g.append(r);
      }
    }
    for (let k = 0; k <= 5; k++) {
      const s = span * k / 5, lab = sv('text', { x: x(s), y: H - 12, 'text-anchor': 'middle', 'font-size': 11, fill: '#5b6475' });
      lab.textContent = secs(s);
      g.append(lab);
    }
    /* the heap: each bucket's highest value, then its value at the end */
    let d = 'M' + x(0) + ',' + y(0), prev = 0;
    for (const b of B) { d += 'L' + x(b[0]) + ',' + y(Math.max(prev, b[3])) + 'L' + x(b[1]) + ',' + y(b[2]); prev = b[2]; }
    g.append(sv('path', { d: d + 'L' + x(B[B.length - 1][1]) + ',' + y(0) + 'Z', fill: 'rgba(36,99,199,.12)', stroke: 'none' }));
    /* the top sites (those the filters leave) stacked: what each held at
     * a bucket's high-water mark, then at its end, as the heap line */
    /* candidates by the bytes their kept rows hold, an upper bound of
     * their highest: past the STACKED-th highest found, none can enter */
    const cand = [];
    for (let i = 0; i < S.length; i++) {
      if (!IN[i]) continue;
      let tot = 0;
      for (let j = siteRows[i]; j < siteRows[i + 1]; j++) if (RP[j]) tot += rB[j];
      if (tot > 0) cand.push([i, tot]);
    }
    cand.sort((p, q) => q[1] - p[1]);
    const top = [];
    for (const [i, tot] of cand) {
      if (top.length >= STACKED && tot <= top[STACKED - 1][1]) break;
      const ser = siteSeries(i);
      let mx = 0;
      for (let t = 0; t < NB; t++) mx = Math.max(mx, ser.high[t], ser.live[t]);
      if (mx > 0) { top.push([i, mx, ser]); top.sort((p, q) => q[1] - p[1]); }
    }
    top.length = Math.min(top.length, STACKED);
    const cum = new Float64Array(NB), cumH = new Float64Array(NB);
    const stackLegend = [];
    top.forEach(([i, mx, ser], n) => {
      const col = PALETTE[n % PALETTE.length];
      let up = '', down = [];
      for (let t = 0; t < NB; t++) {
        const b = B[t], h0 = cumH[t], e0 = cum[t];
        cumH[t] += ser.high[t];
        cum[t] += ser.live[t];
        up += (t ? 'L' : 'M') + x(b[0]) + ',' + y(cumH[t]) + 'L' + x(b[1]) + ',' + y(cum[t]);
        down.push('L' + x(b[1]) + ',' + y(e0) + 'L' + x(b[0]) + ',' + y(h0));
      }
      const path = sv('path', { d: up + down.reverse().join('') + 'Z', fill: col, 'fill-opacity': 0.55, stroke: 'none', class: 'stacked', 'data-site': String(i), 'data-max': String(mx) });
      path.addEventListener('mousemove', (ev) => tipShow(ev, leafName(i) + '\n' + leafLoc(i) + '\nhighest: ' + size(mx)));
      path.addEventListener('mouseleave', tipHide);
      g.append(path);
      stackLegend.push(el('span', { class: 'stack-key', 'data-site': String(i) }, el('span', { class: 'sw', style: 'background:' + col + ';height:10px' }), leafName(i) + ' (' + size(mx) + ')'));
    });
    g.append(sv('path', { d, fill: 'none', stroke: '#2463c7', 'stroke-width': 1.5, id: 'heap-line' }));
    if (rmax) {
      let r = '';
      for (const b of B) if (b[4]) r += (r ? 'L' : 'M') + x(b[0]) + ',' + yr(b[4]) + 'L' + x(b[1]) + ',' + yr(b[4]);
      g.append(sv('path', { d: r, fill: 'none', stroke: '#d08a00', 'stroke-width': 1.2, 'stroke-dasharray': '4 3' }));
    }
    const px = x(T.peak_time_seconds), py = y(T.peak_heap_bytes);
    g.append(sv('circle', { cx: px, cy: py, r: 4, fill: '#e8407a', id: 'peak-mark' }));
    const pl = sv('text', { x: Math.min(px + 6, W - R - 120), y: Math.max(py - 6, 12), 'font-size': 11, fill: '#e8407a' });
    pl.textContent = 'peak ' + size(T.peak_heap_bytes) + ' at ' + secs(T.peak_time_seconds);
    g.append(pl);
    const sel = sv('rect', { class: 'sel', x: 0, y: TOP, width: 0, height: H - TOP - BOT, visibility: 'hidden' });
    g.append(sel);
    const hit = sv('rect', { x: L, y: TOP, width: W - L - R, height: H - TOP - BOT, fill: 'transparent', style: 'cursor:crosshair', id: 'chart-hit' });
    g.append(hit);
    box.append(g);
    $('chart-legend').textContent = '';
    $('chart-legend').append(el('div', { class: 'legend' },
      el('span', null, el('span', { class: 'sw', style: 'background:#2463c7' }), 'heap in use'),
      rmax ? el('span', null, el('span', { class: 'sw', style: 'background:#d08a00' }), 'RSS (' + count(tl.rss_samples) + ' samples; right axis)') : el('span', { text: 'RSS not sampled' }),
      el('span', null, el('span', { class: 'sw', style: 'background:#e8407a' }), 'peak')));
    if (stackLegend.length) $('chart-legend').append(el('div', { class: 'legend', id: 'stack-legend' }, 'Top sites stacked (live bytes): ', ...stackLegend));
    const bucketAt = (px2) => {
      const s = (px2 - L) / (W - L - R) * span;
      let i = Math.floor(s / span * B.length);
      return Math.max(0, Math.min(B.length - 1, i));
    };
    const showSel = () => {
      if (!win) { sel.setAttribute('visibility', 'hidden'); return; }
      sel.setAttribute('visibility', 'visible');
      sel.setAttribute('x', x(B[win[0]][0]));
      sel.setAttribute('width', Math.max(1, x(B[win[1]][1]) - x(B[win[0]][0])));
    };
    let drag = null;
    const ptx = (ev) => { const r = g.getBoundingClientRect(); return (ev.clientX - r.left) * W / r.width; };
    hit.addEventListener('mousedown', (ev) => { drag = bucketAt(ptx(ev)); ev.preventDefault(); });
    g.addEventListener('mousemove', (ev) => {
      if (drag === null) return;
      const b = bucketAt(ptx(ev));
      win = [Math.min(drag, b), Math.max(drag, b)];
      showSel();
    });
    window.addEventListener('mouseup', (ev) => {
      if (drag === null) return;
      const b = bucketAt(ptx(ev));
      setWindow([Math.min(drag, b), Math.max(drag, b)]);
      drag = null;
    });
    showSel();
    windowFigures();
  };
  function windowFigures() {
    const wf = $('window-figures');
    wf.textContent = '';
    if (!win) return;
    const B = D.timeline.buckets;
    let a = 0, by = 0, fr = 0, hi = 0;
    for (let i = win[0]; i <= win[1]; i++) { a += B[i][5]; by += B[i][6]; fr += B[i][7]; hi = Math.max(hi, B[i][3]); }
    if (win[0] > 0) hi = Math.max(hi, B[win[0] - 1][2]);
    const t = el('table', { class: 'kv' });
    kv(t, 'window', secs(B[win[0]][0]) + ' \u2013 ' + secs(B[win[1]][1]));
    kv(t, 'allocations in it', count(a), 'win-allocations', a);
    kv(t, 'bytes allocated in it', size(by) + '   ' + count(by) + ' B', 'win-bytes', by);
    kv(t, 'frees in it', count(fr), 'win-frees', fr);
    kv(t, 'highest heap in it', size(hi) + '   ' + count(hi) + ' B', 'win-high', hi);
    kv(t, 'heap at its end', size(B[win[1]][2]), 'win-end', B[win[1]][2]);
    wf.append(t);
  }
  function setWindow(w) {
    win = w;
    if (w) {
      const B = D.timeline.buckets;
      $('window-text').textContent = 'Time window ' + secs(B[w[0]][0]) + ' \u2013 ' + secs(B[w[1]][1]) + ': the views count ' +
        { alloc: 'what was allocated in it', end: 'what was live at its end', high: 'what was live at its high-water mark' }[winMode] + '.';
    }
    $('window-bar').hidden = !w;
    recompute();
    windowFigures();
    redrawAll();
  }
  $('window-clear').addEventListener('click', () => { setWindow(null); if (drawn.time || current === 'time') draw.time(); });

  /* ---- flame graph (icicle: root on top; flame: at the bottom) ---- */
  const costSel = $('fg-cost');
  COSTS.forEach((c, i) => {
    const o = el('option', { value: String(i), text: c.label });
    if ((c.key === 'temporary' && !tempKnown)) o.disabled = true;
    costSel.append(o);
  });
  let fgZoom = null, fgCost = 0;
  const ROW = 18;
  function color(name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return 'hsl(' + (10 + h % 45) + ',' + (70 + (h >> 8) % 20) + '%,' + (58 + (h >> 16) % 14) + '%)';
  }
  function tipFor(n, c, rootVal) {
    const lines = [n.name];
    if (n.f >= 0 && floc(n.f)) lines.push(floc(n.f));
    lines.push(COSTS[c].label + ': ' + fmtCost(c, n.v[c]) + ciText(c, n.vv[c]) + ' (' + pct(n.v[c], rootVal) + ')');
    lines.push('self: ' + fmtCost(c, n.s[c]));
    if (n.f >= 0 && F[n.f][3]) lines.push('module: ' + F[n.f][3]);
    return lines.join('\n');
  }
  function tipShow(ev, text) {
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 420) + 'px';
    tip.style.top = (ev.clientY + 14) + 'px';
  }
  function tipHide() { tip.hidden = true; }
  draw.flame = function () {
    const root = tree('topdown'), box = $('fg'), c = fgCost;
    if (!fgZoom || !isIn(fgZoom, root)) fgZoom = root;
    box.textContent = '';
    const W = box.clientWidth || 1100, flip = $('fg-flip').checked;
    const frames = [];
    /* ancestors of the zoomed node: full width */
    const anc = [];
    for (let a = fgZoom.parent; a; a = a.parent) anc.unshift(a);
    anc.forEach((a, d) => frames.push([a, d, 0, W, true]));
    const zv = fgZoom.v[c];
    let maxDepth = anc.length;
    if (zv > 0) {
      const stack = [[fgZoom, anc.length, 0]];
      while (stack.length) {
        const [n, d, x0] = stack.pop();
        const w = W * n.v[c] / zv;
        if (w < 0.5) continue;
        frames.push([n, d, x0, w, false]);
        maxDepth = Math.max(maxDepth, d);
        let x = x0;
        const kids = [...n.kids.values()].filter((k) => k.v[c] > 0).sort((a, b) => b.v[c] - a.v[c] || (a.name < b.name ? -1 : 1));
        for (const k of kids) { stack.push([k, d + 1, x]); x += W * k.v[c] / zv; }
      }
    }
    const Hh = (maxDepth + 1) * ROW;
    box.style.height = Hh + 'px';
    const term = $('fg-search').value;
    const frag = document.createDocumentFragment();
    for (const [n, d, x0, w, isAnc] of frames) {
      const e = el('div', { class: 'fr' + (isAnc ? ' anc' : '') + (n === root ? ' root' : '') });
      e.style.left = x0 + 'px';
      e.style.width = Math.max(w, 1) + 'px';
      e.style.top = (flip ? Hh - (d + 1) * ROW : d * ROW) + 'px';
      e.style.background = n === root ? '#c9d3e6' : color(n.name);
      e.dataset.depth = String(d);
      e.dataset.value = String(n.v[c]);
      if (w > 24) e.textContent = n === root ? 'all (' + shortCost(c, n.v[c]) + ')' : n.name;
      if (term && matches(n, term)) e.classList.add('match');
      e.addEventListener('mousemove', (ev) => tipShow(ev, tipFor(n, c, root.v[c])));
      e.addEventListener('mouseleave', tipHide);
      e.addEventListener('click', () => { fgZoom = n; tipHide(); draw.flame(); });
      e._node = n;
      frag.append(e);
    }
    box.append(frag);
    const path = $('fg-path');
    path.textContent = fgZoom === root ? 'Click a frame to zoom into it.' : 'Zoomed into ' + fgZoom.name + ': ' + fmtCost(c, zv) + ' (' + pct(zv, root.v[c]) + ' of all)';
    path.dataset.value = String(zv);
    searchSum();
  };
  function isIn(n, root) { let x = n; while (x.parent) x = x.parent; return x === root; }
  function matches(n, term) {
    if (n.f < 0) return false;
    const t = term.toLowerCase();
    return n.name.toLowerCase().includes(t) || floc(n.f).toLowerCase().includes(t);
  }
  /* the cost of the matching frames, nested matches counted once */
  function searchSum() {
    const term = $('fg-search').value, out = $('fg-match');
    if (!term) { out.textContent = ''; delete out.dataset.value; return; }
    const root = tree('topdown'), c = fgCost;
    let sum = 0;
    const stack = [root];
    while (stack.length) {
      const n = stack.pop();
      if (matches(n, term)) { sum += n.v[c]; continue; }
      for (const k of n.kids.values()) stack.push(k);
    }
    out.dataset.value = String(sum);
    out.textContent = 'Matched: ' + fmtCost(c, sum) + ' (' + pct(sum, root.v[c]) + ')';
  }
  costSel.addEventListener('change', () => { fgCost = +costSel.value; draw.flame(); });
  $('fg-flip').addEventListener('change', () => draw.flame());
  $('fg-reset').addEventListener('click', () => { fgZoom = null; draw.flame(); });
  $('fg-search').addEventListener('input', () => draw.flame());

  /* ---- sortable tables ---- */
  /* cols: {label, get(row) -> value, fmt(value) -> text, num, cls}; rows
   * drawn PAGE at a time; expand(row) -> an element shown under it. */
  function sortTable(box, id, cols, rows, sortCol, expand) {
    let col = sortCol, asc = false, shown = PAGE;
    const render = () => {
      const c = cols[col];
      rows.sort((a, b) => {
        const x = c.get(a), y = c.get(b);
        const r = c.num ? x - y : String(x).localeCompare(String(y));
        return asc ? r : -r;
      });
      const tb = el('tbody');
      for (const r of rows.slice(0, shown)) {
        const tr = el('tr', { class: 'row' });
        cols.forEach((k) => {
          const v = k.get(r);
          const td = el('td', { class: (k.num ? 'num' : '') + (k.cls ? ' ' + k.cls : '') }, k.fmt ? k.fmt(v, r) : v);
          if (k.num) td.dataset.value = String(v);
          if (k.ci) td.dataset.ci = String(Math.round(k.ci(r)));
          tr.append(td);
        });
        if (expand) {
          tr.style.cursor = 'pointer';
          tr.addEventListener('click', () => {
            const nx = tr.nextSibling;
            if (nx && nx.classList.contains('detail')) { nx.remove(); return; }
            tr.after(el('tr', { class: 'detail' }, el('td', { colspan: String(cols.length) }, expand(r))));
          });
        }
        tb.append(tr);
      }
      const head = el('tr');
      cols.forEach((k, i) => head.append(el('th', {
        class: (k.num ? 'num' : '') + (i === col ? ' sorted' + (asc ? ' asc' : '') : ''), text: k.label,
        onclick: () => { if (i === col) asc = !asc; else { col = i; asc = !k.num; } render(); },
      })));
      const t = el('table', { class: 'grid', id }, el('thead', null, head), tb);
      box.textContent = '';
      box.append(t);
      if (rows.length > shown) box.append(el('div', { class: 'more' }, 'Showing ' + count(shown) + ' of ' + count(rows.length) + ' rows. ',
        el('button', { text: 'Show more', onclick: () => { shown += PAGE * 3; render(); } })));
    };
    render();
  }
  /* a sampled trace's estimates: " ± " the half width of the 95%
   * interval of a sum of variance vv, as the text report shows them */
  const halfWidth = (vv) => 1.96 * Math.sqrt(vv);
  function ciText(c, vv) {
    if (!sampled || !(vv > 0)) return '';
    const h = halfWidth(vv);
    return ' \u00b1 ' + (COSTS[c].bytes ? size(h) : count(h));
  }
  /* getVar(row, cost): the variance of a row's figure (sampled traces) */
  function costCols(get, getVar) {
    return COSTS.map((c, i) => ({
      label: c.label, num: true, get: (r) => get(r, i), fmt: (v, r) => (c.bytes ? size(v) : count(v)) + (getVar ? ciText(i, getVar(r, i)) : ''),
      ci: getVar && sampled ? (r) => halfWidth(getVar(r, i)) : null,
    })).filter((c, i) => i !== 4 || tempKnown);
  }

  /* ---- sites ---- */
  function leafName(i) { const n = S[i][0]; return n >= 0 ? fname(N[2 * n + 1]) : '?'; }
  function leafLoc(i) { const n = S[i][0]; return n >= 0 ? floc(N[2 * n + 1]) : ''; }
  draw.sites = function () {
    const rows = [];
    for (let i = 0; i < S.length; i++) if (IN[i]) rows.push(i);
    const cols = [
      { label: 'function', get: leafName, cls: 'name' },
      { label: 'location', get: leafLoc, cls: 'loc' },
    ].concat(costCols(siteVal, (i, c) => VV[i * 5 + c]), [{ label: 'largest', num: true, get: (i) => S[i][8], fmt: size }]);
    sortTable($('sites'), 'sites-table', cols, rows, 2, stackDiv);
  };

  /* ---- top-down and bottom-up trees ---- */
  function treeTable(kind) {
    const box = $(kind), root = tree(kind);
    const filter = document.querySelector('.tree-filter[data-tree=' + kind + ']').value.toLowerCase();
    let col = 2, asc = false;
    const cols = [{ label: kind === 'topdown' ? 'function (callers above callees)' : 'function (allocating, then its callers)', get: (n) => n.name, cls: 'name' },
      { label: 'location', get: (n) => (n.f >= 0 ? floc(n.f) : ''), cls: 'loc' }]
      .concat(costCols((n, c) => n.v[c], (n, c) => n.vv[c]), kind === 'topdown' ? [{ label: 'self ' + COSTS[0].label, num: true, get: (n) => n.s[0], fmt: size }] : []);
    const tb = el('tbody');
    const sorted = (n) => {
      const c = cols[col];
      return [...n.kids.values()].sort((a, b) => {
        const x = c.get(a), y = c.get(b);
        const r = c.num ? x - y : String(x).localeCompare(String(y));
        return asc ? r : -r;
      });
    };
    const hit = (n) => !filter || n.name.toLowerCase().includes(filter) || [...n.kids.values()].some(hit);
    const addRows = (n, depth, after) => {
      let last = after;
      let k = 0;
      for (const ch of sorted(n)) {
        if (!hit(ch)) continue;
        if (k++ >= PAGE) break;
        const tr = rowFor(ch, depth);
        if (last) last.after(tr); else tb.append(tr);
        last = tr;
      }
      return last;
    };
    const rowFor = (n, depth) => {
      const tr = el('tr', { class: 'row' });
      tr._n = n;
      tr._depth = depth;
      const tog = el('span', { class: 'tog', text: n.kids.size ? '\u25b8' : '' });
      cols.forEach((k, i) => {
        const v = k.get(n);
        const td = el('td', { class: (k.num ? 'num' : '') + (k.cls ? ' ' + k.cls : '') });
        if (i === 0) { td.style.paddingLeft = (4 + depth * 14) + 'px'; td.append(tog); }
        td.append(k.fmt ? k.fmt(v, n) : v);
        if (k.num) td.dataset.value = String(v);
        if (k.ci) td.dataset.ci = String(Math.round(k.ci(n)));
        tr.append(td);
      });
      tr.addEventListener('click', () => {
        if (!n.kids.size) return;
        if (tr._open) { /* fold: drop the deeper rows below */
          let nx = tr.nextSibling;
          while (nx && nx._depth > depth) { const d = nx; nx = nx.nextSibling; d.remove(); }
          tr._open = false;
          tog.textContent = '\u25b8';
        } else {
          addRows(n, depth + 1, tr);
          tr._open = true;
          tog.textContent = '\u25be';
        }
      });
      return tr;
    };
    const render = () => {
      tb.textContent = '';
      addRows(root, 0, null);
      /* open the first row, as a start */
      const first = tb.firstChild;
      if (first && !filter) first.click();
      const head = el('tr');
      cols.forEach((k, i) => head.append(el('th', {
        class: (k.num ? 'num' : '') + (i === col ? ' sorted' + (asc ? ' asc' : '') : ''), text: k.label,
        onclick: () => { if (i === col) asc = !asc; else { col = i; asc = !k.num; } render(); },
      })));
      box.textContent = '';
      box.append(el('table', { class: 'grid', id: kind + '-table' }, el('thead', null, head), tb));
    };
    render();
  }
  draw.topdown = () => treeTable('topdown');
  draw.bottomup = () => treeTable('bottomup');
  for (const f of document.querySelectorAll('.tree-filter')) f.addEventListener('input', () => treeTable(f.dataset.tree));

  /* ---- leaks ---- */
  const CLASS = ['unclassified', 'definitely lost', 'indirectly lost', 'possibly lost', 'still reachable'];
  function framesList(stack) {
    const d = el('div', { class: 'stack' });
    for (const f of stack) d.append(el('div', null, f.function !== null ? f.function : f.address, ' ', el('span', { class: 'loc', text: f.file !== null ? f.file + (f.line ? ':' + f.line : '') : (f.module || '') })));
    return d;
  }
  draw.leaks = function () {
    const box = $('leaks');
    box.textContent = '';
    const L = D.leaks;
    if (!L.classified) box.append(el('p', { class: 'note', text: 'The trace has no leak classes (no exit leak check): blocks live at the end are unclassified.' }));
    for (const k of [1, 2, 3, 4, 0]) {
      const groups = L.groups.filter((g) => g[0] === k && IN[g[1]]);
      if (!groups.length) continue;
      let blocks = 0, bytes = 0;
      for (const g of groups) { blocks += g[2]; bytes += g[3]; }
      const sec = el('div', { class: 'leakclass', id: 'leaks-' + CLASS[k].replace(/ .*/, '') });
      sec.append(el('h2', { text: CLASS[k] + ': ' + count(bytes) + ' B in ' + count(blocks) + (blocks === 1 ? ' block' : ' blocks') + ' (' + groups.length + (groups.length === 1 ? ' stack)' : ' stacks)') }));
      const d = el('div');
      sec.append(d);
      sortTable(d, 'leaks-table-' + k, [
        { label: 'bytes', num: true, get: (g) => g[3], fmt: (v) => count(v) + ' B' },
        { label: 'blocks', num: true, get: (g) => g[2], fmt: count },
        { label: 'function', get: (g) => leafName(g[1]), cls: 'name' },
        { label: 'location', get: (g) => leafLoc(g[1]), cls: 'loc' },
      ], groups, 0, (g) => stackDiv(g[1]));
      box.append(sec);
    }
    if (L.suppressed_blocks) box.append(el('p', { text: 'Suppressed: ' + count(L.suppressed_bytes) + ' B in ' + count(L.suppressed_blocks) + ' blocks.' }));
    if (!L.groups.length) box.append(el('p', { text: 'No blocks were live at the end.', id: 'no-leaks' }));
    if (D.fd_leaks && D.fd_leaks.length) {
      box.append(el('h2', { text: 'Descriptors still open at exit' }));
      for (const g of D.fd_leaks) box.append(el('div', null, el('b', { text: g.call + ': ' + g.count + ' (fd ' + g.fds.join(', ') + ')' }), framesList(g.stack)));
    }
    if (D.handle_leaks && D.handle_leaks.length) {
      box.append(el('h2', { text: 'Handles still held at exit' }));
      for (const h of D.handle_leaks) {
        box.append(el('div', null, el('b', { text: h.kind + ': ' + h.held + ' held (' + h.acquired + ' acquired, ' + h.released + ' released)' })));
        for (const s of h.stacks) box.append(el('div', null, count(s.count) + ' from', framesList(s.stack)));
      }
    }
    if (D.leak_checks && D.leak_checks.length) {
      box.append(el('h2', { text: 'On-demand leak checks' }));
      for (const c of D.leak_checks) {
        box.append(el('div', null, el('b', { text: 'check ' + c.check + ' at ' + secs(c.time_seconds) + ': definitely lost ' + count(c.definite_bytes) + ' B, indirectly ' + count(c.indirect_bytes) + ' B, possibly ' + count(c.possible_bytes) + ' B, reachable ' + count(c.reachable_bytes) + ' B' })));
        for (const t of c.top || []) box.append(el('div', null, t.kind + ': ' + count(t.bytes) + ' B in ' + count(t.blocks) + ' blocks', framesList(t.stack)));
      }
    }
  };

  /* ---- sizes and temporaries ---- */
  draw.sizes = function () {
    const box = $('sizes');
    box.textContent = '';
    if (!D.sizes) { box.append(el('p', { class: 'note', text: 'Not known in summary mode (no events).' })); }
    else {
      let max = 1;
      for (const s of D.sizes) max = Math.max(max, s[1]);
      const rng = (k) => (k < 0 ? '0 B' : size(2 ** k) + ' \u2013 ' + size(2 ** (k + 1) - 1));
      const t = el('table', { class: 'grid', id: 'sizes-table' }, el('thead', null, el('tr', null,
        el('th', { text: 'size' }), el('th', { class: 'num', text: 'allocations' }), el('th', { class: 'num', text: 'bytes' }), el('th', { text: '' }))));
      const tb = el('tbody');
      for (const s of D.sizes) {
        const bar = el('div', { class: 'bar' });
        bar.style.width = Math.max(1, 400 * s[1] / max) + 'px';
        const a = el('td', { class: 'num', text: count(s[1]) });
        a.dataset.value = String(s[1]);
        const b = el('td', { class: 'num', text: size(s[2]) });
        b.dataset.value = String(s[2]);
        tb.append(el('tr', { 'data-k': String(s[0]) }, el('td', { text: rng(s[0]) }), a, b, el('td', null, bar)));
      }
      t.append(tb);
      box.append(t);
    }
    const tbox = $('temps');
    if (!tempKnown) { tbox.textContent = ''; tbox.append(el('p', { class: 'note', text: sampled ? 'Not known from samples.' : 'Not known in summary mode.' })); return; }
    const rows = [];
    for (let i = 0; i < S.length; i++) if (S[i][6] && IN[i]) rows.push(i);
    sortTable(tbox, 'temps-table', [
      { label: 'temporary', num: true, get: (i) => S[i][6], fmt: count },
      { label: 'of its allocations', num: true, get: (i) => (S[i][1] ? S[i][6] / S[i][1] : 0), fmt: (v) => (100 * v).toFixed(1) + '%' },
      { label: 'function', get: leafName, cls: 'name' },
      { label: 'location', get: leafLoc, cls: 'loc' },
    ], rows, 0, stackDiv);
  };


  /* ---- the diff page (heaptrail diff --format html): data
   *   base, new  {path, program, sampled, summary_mode, warnings, totals}
   *   frames, nodes  as the report's, for the rows' stacks
   *   rows    [node, status, sites in base, sites in new, base figures,
   *           new figures]; figures: allocations, bytes allocated, frees,
   *           peak bytes, leaked blocks, leaked bytes, temporary (null:
   *           unknown), by the change in bytes, the largest first ---- */
  function diffPage() {
    const R = D.rows, B = D.base, W2 = D.new;
    const DCOSTS = [
      { label: 'bytes allocated', k: 1, bytes: true }, { label: 'allocations', k: 0 },
      { label: 'peak bytes', k: 3, bytes: true }, { label: 'bytes in use at exit', k: 5, bytes: true },
      { label: 'temporary allocations', k: 6 }, { label: 'frees', k: 2 },
    ];
    const bv = (r, c) => r[4 + DCOSTS[c].k] || 0, nv = (r, c) => r[11 + DCOSTS[c].k] || 0;
    const fmtv = (c, v) => (DCOSTS[c].bytes ? size(v) : count(v));
    const signed = (c, d) => (d > 0 ? '+' : d < 0 ? '\u2212' : '') + fmtv(c, Math.abs(d));
    const rel = (a, b) => (a ? (b >= a ? '+' : '\u2212') + (100 * Math.abs(b - a) / a).toFixed(1) + '%' : (b ? 'new' : ''));
    document.title = 'heaptrail diff';
    $('title').textContent = 'diff: ' + base(B.path || '?') + ' \u2192 ' + base(W2.path || '?');
    const nav = $('tabs');
    nav.textContent = '';
    $('filters').hidden = true;
    const main = document.querySelector('main');
    main.textContent = '';
    const views = [['dsummary', 'Summary'], ['dflame', 'Differential flame graph'], ['dchanges', 'Changes']];
    const ddraw = {};
    const dshow = (v) => {
      for (const b of nav.children) b.classList.toggle('on', b.dataset.view === v);
      for (const sct of main.children) sct.classList.toggle('on', sct.id === 'view-' + v);
      ddraw[v]();
    };
    for (const [v, label] of views) {
      nav.append(el('button', { 'data-view': v, text: label, onclick: () => dshow(v) }));
      main.append(el('section', { id: 'view-' + v, class: 'view' }));
    }

    /* summary: the totals side by side */
    ddraw.dsummary = function () {
      const box = $('view-dsummary');
      box.textContent = '';
      const prog = el('table', { class: 'kv' });
      for (const [name, sd] of [['base', B], ['new', W2]]) {
        const p = sd.program || {};
        kv(prog, name, (sd.path || '?') + '  \u2014  ' + (p.command ? p.command.join(' ') : ''), 'dprog-' + name);
        if (sd.sampled) box.append(el('p', { class: 'note', text: name + ': a sampled trace (1 in ' + count(sd.sampled.rate) + ' bytes): its figures are estimates.' }));
        if (sd.summary_mode) box.append(el('p', { class: 'note', text: name + ': a summary trace: temporary allocations and the timeline are not known.' }));
        for (const w of sd.warnings || []) box.append(el('p', { class: 'warn', text: name + ': ' + w }));
      }
      box.append(prog);
      box.append(el('h2', { text: 'Totals' }));
      const TOT = [['allocations', 'allocations', false], ['frees', 'frees', false], ['bytes_allocated', 'bytes allocated', true],
        ['peak_heap_bytes', 'peak heap', true], ['peak_rss_bytes', 'peak RSS', true], ['leaked_bytes', 'in use at exit', true],
        ['leaked_blocks', 'blocks in use at exit', false], ['temporary_allocations', 'temporary allocations', false], ['duration_seconds', 'run time', 't'], ['sites', 'sites', false]];
      const t = el('table', { class: 'grid', id: 'dtotals' }, el('thead', null, el('tr', null, el('th', { text: 'total' }),
        el('th', { class: 'num', text: 'base' }), el('th', { class: 'num', text: 'new' }), el('th', { class: 'num', text: 'change' }), el('th', { class: 'num', text: '%' }))));
      const tb = el('tbody');
      for (const [key, label, kind] of TOT) {
        const a = B.totals[key], b = W2.totals[key];
        const f = (v) => (v === null || v === undefined ? '?' : kind === 't' ? secs(v) : kind ? size(v) : count(v));
        const known = a !== null && b !== null && a !== undefined && b !== undefined;
        const d = known ? b - a : null;
        const ch = el('td', { class: 'num' + (d > 0 ? ' grow' : d < 0 ? ' shrink' : ''),
          text: !known ? '?' : d === 0 ? '0' : (d > 0 ? '+' : '\u2212') + f(Math.abs(d)) });
        const tr = el('tr', { id: 'dsum-' + key, 'data-base': String(a), 'data-new': String(b) },
          el('td', { text: label }), el('td', { class: 'num', text: f(a) }), el('td', { class: 'num', text: f(b) }), ch,
          el('td', { class: 'num', text: known ? rel(a, b) : '' }));
        tb.append(tr);
      }
      t.append(tb);
      box.append(t);
      const st = { same: 0, changed: 0, new: 0, gone: 0 };
      for (const r of R) st[r[1]]++;
      box.append(el('p', { id: 'dstatus', text: count(D.rows_total) + ' sites matched by ' + D.match + ': ' + count(st.changed) + ' changed, ' + count(st.new) + ' new, ' + count(st.gone) + ' gone, ' + count(st.same) + ' the same' + (D.rows_total > R.length ? ' (past the first ' + count(R.length - 1) + ' rows, the rest are summed into one)' : '') + '.' }));
    };

    /* one cost selector for the flame graph and the table */
    let dc = 0;
    const costBox = () => {
      const sel = el('select', { class: 'dcost' });
      DCOSTS.forEach((c, i) => {
        const o = el('option', { value: String(i), text: c.label });
        if (i === 4 && (B.totals.temporary_allocations === null || W2.totals.temporary_allocations === null)) o.disabled = true;
        if (i === dc) o.selected = true;
        sel.append(o);
      });
      sel.addEventListener('change', () => { dc = +sel.value; ddraw[current()](); });
      return el('label', null, 'Cost ', sel);
    };
    const current = () => { for (const b of nav.children) if (b.classList.contains('on')) return b.dataset.view; return 'dsummary'; };

    /* differential flame graph: a frame's width is the sum over its rows
     * of the larger of base and new, its colour the change (red: growth,
     * blue: shrink) */
    let dzoom = null, dtreeCost = -1, dtree = null;
    function buildDiffTree(c) {
      const root = { name: 'all', f: -1, b: 0, n: 0, w: 0, kids: new Map(), parent: null };
      for (const r of R) {
        const b = bv(r, c), n = nv(r, c), w = Math.max(b, n);
        if (!w) continue;
        const fr = [];
        for (let x = r[0]; x >= 0; x = N[2 * x] - 1) fr.push(N[2 * x + 1]);
        let cur = root;
        root.b += b; root.n += n; root.w += w;
        for (let j = fr.length - 1; j >= 0; j--) {
          const key = fname(fr[j]);
          let k = cur.kids.get(key);
          if (!k) { k = { name: key, f: fr[j], b: 0, n: 0, w: 0, kids: new Map(), parent: cur }; cur.kids.set(key, k); }
          k.b += b; k.n += n; k.w += w;
          cur = k;
        }
      }
      return root;
    }
    function dcolor(n) {
      const d = n.n - n.b, m = Math.max(n.b, n.n) || 1, x = Math.min(1, Math.abs(d) / m);
      if (!d) return 'hsl(0,0%,85%)';
      return d > 0 ? 'hsl(0,' + Math.round(40 + 50 * x) + '%,' + Math.round(82 - 30 * x) + '%)' : 'hsl(215,' + Math.round(40 + 50 * x) + '%,' + Math.round(82 - 30 * x) + '%)';
    }
    ddraw.dflame = function () {
      const sec = $('view-dflame');
      if (dtreeCost !== dc) { dtree = buildDiffTree(dc); dtreeCost = dc; dzoom = null; }
      const root = dtree;
      if (!dzoom) dzoom = root;
      sec.textContent = '';
      sec.append(el('div', { class: 'toolbar' }, costBox(), el('button', { text: 'Reset zoom', id: 'dfg-reset', onclick: () => { dzoom = null; ddraw.dflame(); } }),
        el('span', { class: 'help', text: 'Width: the larger of base and new; red grew, blue shrank.' })));
      const path = el('div', { id: 'dfg-path' });
      const box = el('div', { id: 'dfg', class: 'fgbox' });
      sec.append(path, box);
      const Wd = box.clientWidth || 1100, c = dc, ROWH = 18;
      const out = [];
      const anc = [];
      for (let a = dzoom.parent; a; a = a.parent) anc.unshift(a);
      anc.forEach((a, d) => out.push([a, d, 0, Wd, true]));
      let maxD = anc.length;
      if (dzoom.w > 0) {
        const st = [[dzoom, anc.length, 0]];
        while (st.length) {
          const [n, d, x0] = st.pop();
          const w = Wd * n.w / dzoom.w;
          if (w < 0.5) continue;
          out.push([n, d, x0, w, false]);
          maxD = Math.max(maxD, d);
          let x = x0;
          for (const k of [...n.kids.values()].sort((a, b2) => b2.w - a.w || (a.name < b2.name ? -1 : 1))) { st.push([k, d + 1, x]); x += Wd * k.w / dzoom.w; }
        }
      }
      box.style.height = (maxD + 1) * ROWH + 'px';
      const frag = document.createDocumentFragment();
      for (const [n, d, x0, w, isAnc] of out) {
        const e = el('div', { class: 'fr' + (isAnc ? ' anc' : '') });
        e.style.left = x0 + 'px';
        e.style.width = Math.max(w, 1) + 'px';
        e.style.top = d * ROWH + 'px';
        e.style.background = dcolor(n);
        e.dataset.depth = String(d);
        e.dataset.base = String(n.b);
        e.dataset.new = String(n.n);
        if (w > 24) e.textContent = n === root ? 'all (' + signed(c, n.n - n.b) + ')' : n.name;
        const tipText = [n.name].concat(n.f >= 0 && floc(n.f) ? [floc(n.f)] : [],
          [DCOSTS[c].label + ': ' + fmtv(c, n.b) + ' \u2192 ' + fmtv(c, n.n) + ' (' + signed(c, n.n - n.b) + (n.b ? ', ' + rel(n.b, n.n) : '') + ')']).join('\n');
        e.addEventListener('mousemove', (ev) => tipShow(ev, tipText));
        e.addEventListener('mouseleave', tipHide);
        e.addEventListener('click', () => { dzoom = n; tipHide(); ddraw.dflame(); });
        e._node = n;
        frag.append(e);
      }
      box.append(frag);
      path.textContent = dzoom === root ? 'Click a frame to zoom into it.' : 'Zoomed into ' + dzoom.name + ': ' + fmtv(c, dzoom.b) + ' \u2192 ' + fmtv(c, dzoom.n);
      path.dataset.base = String(dzoom.b);
      path.dataset.new = String(dzoom.n);
    };

    /* the rows, sortable, with their stacks */
    const rowFrames = (r) => { const o = []; for (let x = r[0]; x >= 0; x = N[2 * x] - 1) o.push(N[2 * x + 1]); return o; };
    const leafOf = (r) => (r[0] >= 0 ? N[2 * r[0] + 1] : -1);
    ddraw.dchanges = function () {
      const sec = $('view-dchanges');
      sec.textContent = '';
      const only = el('input', { type: 'checkbox', id: 'dchanged-only' });
      only.checked = dOnly;
      only.addEventListener('change', () => { dOnly = only.checked; ddraw.dchanges(); });
      sec.append(el('div', { class: 'toolbar' }, costBox(), el('label', null, only, ' only rows whose cost changed')));
      const box = el('div');
      sec.append(box);
      const c = dc;
      const rows = R.filter((r) => !dOnly || bv(r, c) !== nv(r, c));
      sortTable(box, 'dchanges-table', [
        { label: 'status', get: (r) => r[1] },
        { label: 'function', get: (r) => { const f = leafOf(r); return f >= 0 ? fname(f) : '?'; }, cls: 'name' },
        { label: 'location', get: (r) => { const f = leafOf(r); return f >= 0 ? floc(f) : ''; }, cls: 'loc' },
        { label: 'base', num: true, get: (r) => bv(r, c), fmt: (v) => fmtv(c, v) },
        { label: 'new', num: true, get: (r) => nv(r, c), fmt: (v) => fmtv(c, v) },
        { label: 'change', num: true, get: (r) => nv(r, c) - bv(r, c), fmt: (v) => el('span', { class: v > 0 ? 'grow' : v < 0 ? 'shrink' : '', text: signed(c, v) }) },
        { label: 'change %', num: true, get: (r) => (bv(r, c) ? (nv(r, c) - bv(r, c)) / bv(r, c) : nv(r, c) ? Number.MAX_VALUE : 0), fmt: (v) => (v === Number.MAX_VALUE ? 'new' : (100 * v).toFixed(1) + '%') },
      ], rows, 5, (r) => {
        const d = el('div', { class: 'stack' });
        for (const f of rowFrames(r)) d.append(el('div', null, fname(f), ' ', el('span', { class: 'loc', text: floc(f) })));
        return d;
      });
    };
    let dOnly = true;
    dshow('dsummary');
    document.documentElement.dataset.ready = '1';
    window.heaptrail = { data: D, show: dshow, diffTree: () => dtree };
  }

  /* ---- the filter bar ---- */
  function filterNote() {
    const parts = [];
    if (FL.thread >= 0) parts.push('thread ' + threadLabel(FL.thread));
    if (FL.module) parts.push('module ' + FL.module);
    if (FL.fn) parts.push((FL.exclude ? 'not through ' : 'through ') + '"' + FL.fn + '"');
    if (FL.leaked) parts.push('only blocks never freed');
    if (FL.temp) parts.push('only temporary allocations');
    if (FL.aliveAt !== null) parts.push('alive at ' + secs(FL.aliveAt) + ' (the end of its ' + secs((D.timeline.span_seconds || 0) / NB) + ' step)');
    if (FL.minLife !== null) parts.push('alive for at least ' + secs(FL.minLife) + ' (rounded up to a power of two of ns; a block never freed lives to the end)');
    const n = $('filter-note');
    let shown = 0;
    for (let i = 0; i < S.length; i++) shown += IN[i];
    n.textContent = parts.length ? 'Filters: ' + parts.join(', ') + '. ' + count(shown) + ' of ' + count(S.length) + ' sites.' +
      ' The size histogram is not filtered.' : '';
    n.dataset.sites = String(shown);
  }
  function threadLabel(t) {
    const th = (D.threads || [])[t];
    return th ? th[0] + (th[2] !== null ? ' (' + th[2] + ')' : '') + ' tid ' + th[1] : String(t);
  }
  function filtersChanged() {
    recompute();
    if (win) setWindow(win); else redrawAll();
    /* the chart's stacked sites follow the filters too */
    drawn.time = current === 'time';
    if (drawn.time) draw.time();
  }
  (function filterBar() {
    const bar = $('filters');
    if (summary) { bar.append(el('span', { class: 'help', text: 'Filters need events: a summary trace has none.' })); return; }
    const th = el('select', { id: 'flt-thread' }, el('option', { value: '-1', text: 'all threads' }));
    (D.threads || []).forEach((t, i) => th.append(el('option', { value: String(i), text: threadLabel(i) })));
    th.addEventListener('change', () => { FL.thread = +th.value; filtersChanged(); });
    const mods = new Set();
    for (const f of F) if (f[3] !== null) mods.add(base(f[3]));
    const md = el('select', { id: 'flt-module' }, el('option', { value: '', text: 'all modules' }));
    for (const m of [...mods].sort()) md.append(el('option', { value: m, text: m }));
    md.addEventListener('change', () => { FL.module = md.value; filtersChanged(); });
    const fn = el('input', { type: 'search', id: 'flt-fn', placeholder: 'through function or file' });
    fn.addEventListener('change', () => { FL.fn = fn.value; filtersChanged(); });
    const ex = el('select', { id: 'flt-exclude' }, el('option', { value: '0', text: 'include' }), el('option', { value: '1', text: 'exclude' }));
    ex.addEventListener('change', () => { FL.exclude = ex.value === '1'; if (FL.fn) filtersChanged(); });
    const lk = el('input', { type: 'checkbox', id: 'flt-leaked' });
    lk.addEventListener('change', () => { FL.leaked = lk.checked; filtersChanged(); });
    const tp = el('input', { type: 'checkbox', id: 'flt-temp' });
    if (!tempKnown) { tp.disabled = true; tp.title = 'not known from samples'; }
    tp.addEventListener('change', () => { FL.temp = tp.checked; filtersChanged(); });
    const num = (id, key, scale) => {
      const i = el('input', { type: 'number', id, min: '0', step: 'any' });
      i.addEventListener('change', () => { FL[key] = i.value === '' ? null : +i.value * scale; filtersChanged(); });
      return i;
    };
    const wm = el('select', { id: 'flt-winmode' }, el('option', { value: 'alloc', text: 'allocated in it' }),
      el('option', { value: 'end', text: 'live at its end' }), el('option', { value: 'high', text: 'live at its high-water mark' }));
    wm.addEventListener('change', () => { winMode = wm.value; filtersChanged(); });
    bar.append(th, md, el('label', null, fn, ' ', ex), el('label', null, lk, ' only in use at exit'), el('label', null, tp, ' only temporaries'),
      el('label', null, 'alive at ', num('flt-alive-at', 'aliveAt', 1), ' s'),
      el('label', null, 'alive \u2265 ', num('flt-min-life', 'minLife', 1e-3), ' ms'),
      el('label', null, 'window counts ', wm));
  })();

  /* ---- caller/callee: one function, who calls it and whom it calls ---- */
  const ccSel = $('cc-cost');
  COSTS.forEach((c, i) => {
    const o = el('option', { value: String(i), text: c.label });
    if (c.key === 'temporary' && !tempKnown) o.disabled = true;
    ccSel.append(o);
  });
  let ccFn = null;
  function ccCompute() {
    const fns = new Map(), callers = new Map(), callees = new Map();
    const get = (m, f) => { const nm = fname(f); let x = m.get(nm); if (!x) { x = { name: nm, f, self: [0, 0, 0, 0, 0], v: [0, 0, 0, 0, 0], sv: [0, 0, 0, 0, 0], vv: [0, 0, 0, 0, 0] }; m.set(nm, x); } return x; };
    for (let i = 0; i < S.length; i++) {
      if (!IN[i]) continue;
      const fr = siteFrames(i), names = fr.map(fname);
      if (!fr.length) continue;
      const seen = new Set(), cs = new Map(), ce = new Map();
      fr.forEach((f, j) => {
        if (!seen.has(names[j])) { seen.add(names[j]); const x = get(fns, f); for (let c = 0; c < 5; c++) { x.v[c] += V[i * 5 + c]; x.vv[c] += VV[i * 5 + c]; } }
        if (ccFn !== null && names[j] === ccFn) {
          if (j + 1 < fr.length) cs.set(names[j + 1], fr[j + 1]);
          if (j > 0) ce.set(names[j - 1], fr[j - 1]);
        }
      });
      const x = get(fns, fr[0]);
      for (let c = 0; c < 5; c++) { x.self[c] += V[i * 5 + c]; x.sv[c] += VV[i * 5 + c]; }
      for (const [m, set] of [[callers, cs], [callees, ce]]) for (const f of set.values()) { const y = get(m, f); for (let c = 0; c < 5; c++) { y.v[c] += V[i * 5 + c]; y.vv[c] += VV[i * 5 + c]; } }
    }
    return { fns, callers, callees };
  }
  draw.callers = function () {
    const c = +ccSel.value, cc = ccCompute(), term = $('cc-search').value.toLowerCase();
    const nameCols = [{ label: 'function', get: (r) => r.name, cls: 'name' }, { label: 'location', get: (r) => (r.f >= 0 ? floc(r.f) : ''), cls: 'loc' }];
    const fmt = (v) => (COSTS[c].bytes ? size(v) : count(v));
    /* with the 95% interval of a sampled trace's estimate */
    const fmtv = (v, r) => fmt(v) + ciText(c, r.vv[c]), fmts = (v, r) => fmt(v) + ciText(c, r.sv[c]);
    const pick = (r) => { ccFn = r.name; draw.callers(); return el('span'); };
    const selBox = $('cc-selected');
    selBox.textContent = '';
    const me = ccFn !== null ? cc.fns.get(ccFn) : null;
    if (me) {
      selBox.append(el('span', { id: 'cc-name', text: me.name }), ' ', el('span', { class: 'loc', text: floc(me.f) }), ': ' + COSTS[c].label + ' ',
        el('span', { id: 'cc-total', 'data-value': String(me.v[c]), text: fmtCost(c, me.v[c]) + ciText(c, me.vv[c]) }), ' in all, ',
        el('span', { id: 'cc-self', 'data-value': String(me.self[c]), text: fmtCost(c, me.self[c]) + ciText(c, me.sv[c]) }), ' itself');
    } else {
      selBox.textContent = ccFn !== null ? 'No cost through ' + ccFn + ' with these filters.' : 'No function picked.';
    }
    sortTable($('cc-callers'), 'cc-callers-table', nameCols.concat([{ label: 'through it', num: true, get: (r) => r.v[c], fmt: fmtv }]),
      [...cc.callers.values()], 2, pick);
    sortTable($('cc-callees'), 'cc-callees-table', nameCols.concat([{ label: 'through it', num: true, get: (r) => r.v[c], fmt: fmtv }]),
      [...cc.callees.values()], 2, pick);
    const rows = [...cc.fns.values()].filter((r) => r.v[c] > 0 && (!term || r.name.toLowerCase().includes(term)));
    sortTable($('cc-functions'), 'cc-functions-table', nameCols.concat([
      { label: 'total', num: true, get: (r) => r.v[c], fmt: fmtv }, { label: 'self', num: true, get: (r) => r.self[c], fmt: fmts }]), rows, 2, pick);
  };
  ccSel.addEventListener('change', () => draw.callers());
  $('cc-search').addEventListener('input', () => draw.callers());

  recompute();

  show('summary');
  document.documentElement.dataset.ready = '1'; /* the script ran to its end */
  /* for the tests and the curious: what the page computed */
  window.heaptrail = { data: D, tree, setWindow, show, values: () => V, included: () => IN };
})();
