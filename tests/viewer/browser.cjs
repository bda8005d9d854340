// tests/viewer/browser.cjs — end-to-end test of `heapgraph view`: starts the
// viewer on snapshots made by the tests, checks the access rules over raw
// HTTP (token, Host header, traversal, methods), checks that the JSON API
// answers what the CLI's --json answers, then drives Debian's chromium
// through playwright-core over every view, asserting what the page shows
// against the CLI, and keeps a screenshot of each view. Allocation stacks:
// a `heapgraph run --stacks` snapshot, a sampled one written by mkstacks.c
// and snapshots without stacks.
//   node browser.cjs CLI SNAPDIR SHOTDIR PLAYWRIGHT_CORE_DIR
'use strict';
const {spawn, execFileSync} = require('child_process');
const http = require('http');
const net = require('net');
const fs = require('fs');
const path = require('path');

const [cli, dir, shots, pwdir] = process.argv.slice(2);
const {chromium} = require(pwdir);
fs.mkdirSync(shots, {recursive: true});

let passed = 0, failed = 0;
function check(name, ok, detail) {
  if (ok) passed++;
  else { failed++; console.log('FAIL ' + name + (detail !== undefined ? ': ' + JSON.stringify(detail).slice(0, 600) : '')); }
}
const eq = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const snap = (f) => path.join(dir, f);
function cliLines(...args) {
  return execFileSync(cli, [...args, '--json'], {encoding: 'utf8'}).split('\n').filter(Boolean).map((l) => JSON.parse(l));
}
function cliJson(...args) {
  let out;
  try { out = execFileSync(cli, [...args, '--json'], {encoding: 'utf8', maxBuffer: 1 << 26}); }
  catch (e) { out = e.stdout; } // leaks exits 1 when there are leaks
  const t = out.trim();
  return t.startsWith('{') && !t.includes('}\n{') ? JSON.parse(t) : t.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

const servers = [];
function startViewer(args, env) {
  return new Promise((resolve, reject) => {
    const p = spawn(cli, ['view', ...args, ...(env ? [] : ['--no-open'])], {stdio: ['ignore', 'pipe', 'pipe'], env: env || process.env});
    servers.push(p);
    let buf = '';
    p.stdout.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0 && !p.url) {
        p.url = buf.slice(0, nl);
        const u = new URL(p.url);
        p.port = Number(u.port);
        p.token = u.searchParams.get('token');
        resolve(p);
      }
    });
    p.stderr.on('data', (d) => { p.err = (p.err || '') + d; });
    p.on('exit', (code) => { if (!p.url) reject(new Error('viewer exited ' + code + ': ' + p.err)); });
  });
}
// SIGTERM ends a viewer cleanly: exit 0, nothing from ASan/LSan on stderr.
async function stopAll(checked) {
  for (const p of servers) {
    if (p.exitCode === null && p.signalCode === null) {
      const done = new Promise((res) => p.once('exit', res));
      p.kill('SIGTERM');
      await done;
    }
    if (checked) check('viewer exits 0 on SIGTERM', p.exitCode === 0 && !/Sanitizer/.test(p.err || ''), [p.exitCode, (p.err || '').slice(-800)]);
  }
}

// Raw request: full control over the request line and the Host header.
function raw(port, line, headers) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let data = '';
    s.on('connect', () => s.write(line + '\r\n' + Object.entries(headers).map(([k, v]) => k + ': ' + v + '\r\n').join('') + 'Connection: close\r\n\r\n'));
    s.on('data', (d) => { data += d; });
    s.on('end', () => { const status = Number((data.match(/^HTTP\/1\.[01] (\d+)/) || [])[1]); resolve({status, data}); });
    s.on('error', () => resolve({status: 0, data}));
  });
}
function get(v, p) {
  return new Promise((resolve, reject) => {
    const sep = p.includes('?') ? '&' : '?';
    http.get({host: '127.0.0.1', port: v.port, path: p + sep + 'token=' + v.token}, (r) => {
      let b = '';
      r.on('data', (d) => { b += d; });
      r.on('end', () => resolve({status: r.statusCode, body: b, headers: r.headers}));
    }).on('error', reject);
  });
}
const apiJson = async (v, p) => JSON.parse((await get(v, '/api/' + p)).body);

async function security(v) {
  const host = {Host: '127.0.0.1:' + v.port};
  check('no token: 403', (await raw(v.port, 'GET / HTTP/1.1', host)).status === 403);
  check('wrong token: 403', (await raw(v.port, 'GET /?token=' + '0'.repeat(32) + ' HTTP/1.1', host)).status === 403);
  check('token prefix: 403', (await raw(v.port, 'GET /?token=' + v.token.slice(0, 31) + ' HTTP/1.1', host)).status === 403);
  check('no token on the API: 403', (await raw(v.port, 'GET /api/summary HTTP/1.1', host)).status === 403);
  const ok = await raw(v.port, 'GET /?token=' + v.token + ' HTTP/1.1', host);
  check('token: 200', ok.status === 200, ok.data.slice(0, 200));
  check('token: sets a SameSite=Strict HttpOnly cookie', /Set-Cookie: hg_view_\d+=[0-9a-f]{32}; Path=\/; HttpOnly; SameSite=Strict/i.test(ok.data));
  check('CSP header', /Content-Security-Policy: default-src 'none'; script-src 'self'/i.test(ok.data));
  const cookie = {...host, Cookie: 'hg_view_' + v.port + '=' + v.token};
  check('cookie alone: 200', (await raw(v.port, 'GET /api/summary HTTP/1.1', cookie)).status === 200);
  check('other port\'s cookie: 403', (await raw(v.port, 'GET /api/summary HTTP/1.1', {...host, Cookie: 'hg_view_1=' + v.token})).status === 403);
  for (const bad of ['evil.example:' + v.port, 'evil.example', '127.0.0.1:' + (v.port + 1), 'localhost.evil.example:' + v.port, '127.0.0.1.nip.io:' + v.port])
    check('Host ' + bad + ': 403', (await raw(v.port, 'GET /?token=' + v.token + ' HTTP/1.1', {Host: bad})).status === 403);
  check('no Host (HTTP/1.0): 403', (await raw(v.port, 'GET /?token=' + v.token + ' HTTP/1.0', {})).status === 403);
  check('Host localhost: 200', (await raw(v.port, 'GET /?token=' + v.token + ' HTTP/1.1', {Host: 'localhost:' + v.port})).status === 200);
  for (const p of ['/../../../../etc/passwd', '/%2e%2e/%2e%2e/%2e%2e/etc/passwd', '/..%2f..%2f..%2fetc%2fpasswd', '/viewer/app.js',
    '/tools/cmd_view.c', '/app.js/../../Makefile', '//etc/passwd', '/api/../../etc/passwd', '/index.html%00.js']) {
    const r = await raw(v.port, 'GET ' + p + '?token=' + v.token + ' HTTP/1.1', host);
    // %00 ends the decoded path: "/index.html%00.js" is the page itself, never another file
    check('traversal ' + p + ' refused', (r.status === 404 || (p.includes('%00') && r.data.includes('<title>heapgraph'))) && !r.data.includes('root:x:0'), r.status);
  }
  check('POST: 405', (await raw(v.port, 'POST /api/summary?token=' + v.token + ' HTTP/1.1', {...host, 'Content-Length': '0'})).status === 405);
  const js = await get(v, '/app.js');
  check('app.js served as JavaScript', js.status === 200 && /javascript/.test(js.headers['content-type']) && js.body.includes("'use strict'"));
  check('unknown API: 404', (await get(v, '/api/nope')).status === 404);
  check('bad node: 404', (await get(v, '/api/show?node=0x1')).status === 404);
}

// The API answers what `heapgraph CMD --json` answers.
async function apiMatchesCli(v, s, base) {
  const same = (name, a, b) => check('API ' + name + ' = CLI', eq(a, b), {api: a, cli: b});
  same('info', await apiJson(v, 'info'), cliJson('info', s));
  same('regions', await apiJson(v, 'regions'), cliLines('regions', s));
  same('top', await apiJson(v, 'top?n=50'), cliJson('top', s, '-n', '50'));
  same('leaks', await apiJson(v, 'leaks'), cliJson('leaks', s));
  same('cycles', await apiJson(v, 'cycles'), cliJson('cycles', s));
  const top = cliJson('top', s, '-n', '5');
  for (const n of top.nodes.slice(0, 3)) {
    same('show ' + n.addr, await apiJson(v, 'show?node=' + n.addr), cliJson('show', s, n.addr));
    same('dominators ' + n.addr, await apiJson(v, 'dominators?node=' + n.addr), cliJson('dominators', s, n.addr));
    same('path ' + n.addr, await apiJson(v, 'path?node=' + n.addr + '&n=3'), cliJson('path', s, n.addr, '-n', '3'));
  }
  // classes: same count and bytes for every named class; retained = top's
  const cls = cliJson('classes', s), api = (await apiJson(v, 'classes?n=1000')).rows;
  const byName = new Map(api.map((r) => [r.class, r]));
  const named = cls.filter((r) => r.kind !== null);
  check('classes: every class listed', named.every((r) => byName.has(r.class)), named.filter((r) => !byName.has(r.class)));
  check('classes: counts and bytes = CLI classes', named.every((r) => byName.get(r.class).count === r.count && byName.get(r.class).bytes === r.bytes));
  const topAll = cliJson('top', s, '-n', '100000');
  check('classes: retained = CLI top', topAll.classes.filter((c) => c.class !== null).every((c) => byName.get(c.class) && byName.get(c.class).retained === c.retained));
  if (base) {
    const d = await apiJson(v, 'diff?n=30'), c = cliJson('diff', base, s);
    delete d.class_count;
    same('diff', d, c);
  }
  return {top, topAll, cls};
}

async function shot(page, name) {
  await page.screenshot({path: path.join(shots, name + '.png'), fullPage: false});
}
async function visit(page, v, hash) {
  await page.goto(v.url + hash);
  await page.waitForFunction((h) => document.getElementById('main').getAttribute('data-ready') === h, hash);
  await page.waitForTimeout(60);
  const text = await page.textContent('main');
  check(hash + ': no [object …], undefined, NaN or error shown', !/\[object |undefined|NaN/.test(text) && !(await page.$('main .err')), text.slice(0, 300));
}
async function navigated(page, hash) {
  await page.waitForFunction((h) => document.getElementById('main').getAttribute('data-ready') === h, hash, {timeout: 5000});
}
const texts = (page, sel) => page.$$eval(sel, (es) => es.map((e) => e.textContent));
const vals = (page, sel) => page.$$eval(sel, (es) => es.map((e) => Number(e.getAttribute('data-v'))));

async function walkFixture(page, v, s, base, ref) {
  const info = cliJson('info', s);
  // Summary
  await visit(page, v, '#/summary');
  check('summary: process', (await page.textContent('h1')).startsWith(info.process), await page.textContent('h1'));
  check('summary: block count', eq(await vals(page, '[data-card="Heap blocks"] .v [data-v]'), [info.counts.nodes]));
  const leaks = cliJson('leaks', s);
  check('summary: leaked bytes', eq(await vals(page, '[data-card="Leaked"] .v [data-v]'), [leaks.leaked_bytes]));
  // what fills memory: the first classes and blocks of `heapgraph top`
  const top8 = cliJson('top', s, '-n', '8');
  const tcls = await page.$$eval('#top-classes tbody tr', (t) => t.map((e) => [e.getAttribute('data-class'), Number(e.querySelector('[data-f=retained] [data-v]').getAttribute('data-v'))]));
  check('summary: top classes = CLI top', eq(tcls, top8.classes.map((c) => [c.class === null ? '(unclassified)' : c.class, c.retained])), [tcls, top8.classes]);
  const tnodes = await page.$$eval('#top-retainers tbody tr', (t) => t.map((e) => [e.getAttribute('data-addr'), Number(e.querySelector('[data-f=retained] [data-v]').getAttribute('data-v'))]));
  check('summary: biggest retainers = CLI top', eq(tnodes, top8.nodes.map((n) => [n.addr, n.retained])), [tnodes, top8.nodes]);
  await shot(page, 'summary');
  await page.click('#top-retainers tbody tr td:nth-child(2)');
  await navigated(page, '#/object/' + top8.nodes[0].addr);
  check('summary: a retainer opens its object', (await page.textContent('#obj-addr')) === top8.nodes[0].addr);
  await visit(page, v, '#/summary');
  await page.click('#top-classes tbody tr');
  await page.waitForFunction(() => /^#\/class\/\d+$/.test(document.getElementById('main').getAttribute('data-ready') || ''));
  check('summary: a top class opens its instances', (await page.textContent('#class-name')) === tcls[0][0]);
  // Classes: counts, self bytes and retained against the CLI
  await visit(page, v, '#/classes');
  const rows = await page.$$eval('#classes tbody tr', (trs) => trs.map((tr) => ({
    cls: tr.getAttribute('data-class'),
    count: Number(tr.querySelector('[data-f=count] [data-v]').getAttribute('data-v')),
    bytes: Number(tr.querySelector('[data-f=bytes] [data-v]').getAttribute('data-v')),
    retained: Number(tr.querySelector('[data-f=retained] [data-v]').getAttribute('data-v'))})));
  const cliCls = new Map(ref.cls.filter((r) => r.kind !== null).map((r) => [r.class, r]));
  const cliRet = new Map(ref.topAll.classes.map((r) => [r.class, r.retained]));
  check('classes view: every class shown', rows.filter((r) => cliCls.has(r.cls)).length === cliCls.size, rows);
  check('classes view: counts = CLI', rows.every((r) => !cliCls.has(r.cls) || cliCls.get(r.cls).count === r.count));
  check('classes view: self bytes = CLI', rows.every((r) => !cliCls.has(r.cls) || cliCls.get(r.cls).bytes === r.bytes));
  check('classes view: retained = CLI top', rows.every((r) => !cliCls.has(r.cls) || (cliRet.get(r.cls) || 0) === r.retained), rows);
  check('classes view: biggest retained first', rows.every((r, i) => !i || rows[i - 1].retained >= r.retained));
  await shot(page, 'classes');
  await page.click('th[data-sort=count]');
  await navigated(page, '#/classes?sort=count');
  const counts = await vals(page, '#classes [data-f=count] [data-v]');
  check('classes view: sort by count', counts.every((c, i) => !i || counts[i - 1] >= c), counts);
  await page.fill('#class-filter', 'leaky');
  await navigated(page, '#/classes?sort=count&q=leaky');
  check('classes view: filter', eq(await page.$$eval('#classes tbody tr', (t) => t.map((e) => e.getAttribute('data-class'))), ['Leaky']));
  // keyboard: j selects the row, Enter opens the class
  await page.keyboard.press('j');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => /^#\/class\/\d+$/.test(document.getElementById('main').getAttribute('data-ready') || ''));
  check('class instances: title', (await page.textContent('#class-name')) === 'Leaky');
  check('class instances: all listed', (await page.$$('#instances tbody tr')).length === cliCls.get('Leaky').count);
  await shot(page, 'instances');
  await page.goBack();
  await navigated(page, '#/classes?sort=count&q=leaky');
  check('back button returns to the filtered classes', (await page.inputValue('#class-filter')) === 'leaky');
  // Dominator tree
  await visit(page, v, '#/dominators');
  const first = await page.$eval('#domtree tbody tr', (tr) => ({addr: tr.getAttribute('data-addr'), ret: Number(tr.querySelector('[data-f=retained] [data-v]').getAttribute('data-v'))}));
  check('dominators: biggest retainer first = CLI top', first.addr === ref.top.nodes[0].addr && first.ret === ref.top.nodes[0].retained, [first, ref.top.nodes[0]]);
  check('dominators: icicle drawn', (await page.$$('#icicle .ic')).length > 2);
  await page.keyboard.press('j');
  await page.keyboard.press('ArrowRight');
  const dom = cliJson('dominators', s, first.addr);
  await page.waitForFunction((n) => document.querySelectorAll('#domtree tr[data-depth="1"]').length === n, dom.dominated_count);
  const kids = await page.$$eval('#domtree tr[data-depth="1"]', (t) => t.map((e) => e.getAttribute('data-addr')));
  check('dominators: expanded children = CLI dominators', eq(kids, dom.dominated.map((d) => d.addr)), [kids, dom.dominated]);
  await shot(page, 'dominators');
  await page.keyboard.press('ArrowLeft');
  check('dominators: collapse', (await page.$$('#domtree tr[data-depth="1"]')).length === 0);
  // Object: a node behind two references; its path and chain against the CLI
  const deep = ref.top.nodes.find((n) => cliJson('path', s, n.addr).paths[0].length >= 2) || ref.top.nodes[0];
  await visit(page, v, '#/object/' + deep.addr);
  const p = cliJson('path', s, deep.addr, '-n', '5');
  const shown = await page.$$eval('#paths .path', (ps) => ps.map((e) => [...e.querySelectorAll('.step a.addr')].map((a) => a.textContent)));
  check('object: retaining paths = CLI path', eq(shown, p.paths.map((x) => x.steps.map((st) => st.addr))), [shown, p]);
  const sh = cliJson('show', s, deep.addr);
  check('object: class and size', (await page.textContent('#obj-class')) === (sh.node.class || '(unclassified)') &&
    eq(await vals(page, '[data-card=Size] [data-v]'), [sh.node.size]));
  check('object: outgoing references', (await page.$$('#out tbody tr')).length === sh.out.length);
  check('object: incoming references', (await page.$$('#in tbody tr')).length === sh.in.length);
  const chain = cliJson('dominators', s, deep.addr).chain.map((c) => c.addr).reverse();
  check('object: dominator chain = CLI', eq(await texts(page, '#chain a.addr'), chain));
  await shot(page, 'object');
  // an address link leads to that object, and back returns
  const target = await page.$eval('#out tbody a.addr', (a) => a.textContent).catch(() => null);
  if (target) {
    await page.click('#out tbody a.addr');
    await navigated(page, '#/object/' + target);
    check('object: address link', (await page.textContent('#obj-addr')) === target);
    await page.goBack();
    await navigated(page, '#/object/' + deep.addr);
    check('object: back', (await page.textContent('#obj-addr')) === deep.addr);
  }
  // Leaks
  await visit(page, v, '#/leaks');
  const lrows = await page.$$eval('#leaks tbody tr[data-addr]', (t) => t.map((e) => ({addr: e.getAttribute('data-addr'), bytes: Number(e.querySelector('[data-f=bytes] [data-v]').getAttribute('data-v'))})));
  check('leaks: root leaks = CLI', eq(lrows, leaks.leaks.map((l) => ({addr: l.addr, bytes: l.bytes}))), [lrows, leaks.leaks]);
  const cyc = leaks.leaks.findIndex((l) => l.group_count > 1);
  if (cyc >= 0) {
    await page.click(`#leaks tbody tr[data-addr="${leaks.leaks[cyc].addr}"] td:nth-child(3)`);
    await page.waitForSelector('#leaks tr.detail:not([hidden]) .step');
    check('leaks: group members', (await page.$$('#leaks tr.detail:not([hidden]) .step')).length === leaks.leaks[cyc].group_count);
  }
  await shot(page, 'leaks');
  // Cycles
  await visit(page, v, '#/cycles');
  const cycles = cliJson('cycles', s);
  check('cycles: count = CLI', (await page.$$('.cyc')).length === Math.min(20, cycles.cycle_count));
  check('cycles: sizes = CLI', eq(await page.$$eval('.cyc', (c) => c.map((e) => Number(e.getAttribute('data-count')))), cycles.cycles.map((c) => c.count)));
  await shot(page, 'cycles');
  // Diff
  if (base) {
    const d = cliJson('diff', base, s);
    await visit(page, v, '#/diff');
    const drows = await page.$$eval('#diff tbody tr', (t) => t.map((e) => ({cls: e.getAttribute('data-class'), db: Number(e.querySelector('[data-f=delta_bytes] [data-v]').getAttribute('data-v')), dc: Number(e.querySelector('[data-f=delta_count] [data-v]').getAttribute('data-v'))})));
    check('diff: rows = CLI diff', eq(drows, d.classes.map((c) => ({cls: c.class === null ? '(unclassified)' : c.class, db: c.delta_bytes, dc: c.delta_count}))), [drows, d.classes]);
    const nw = d.classes.find((c) => c.new);
    check('diff: new class marked', !nw || (await page.$eval(`#diff tr[data-class="${nw.class}"]`, (e) => e.textContent)).includes('new'));
    await shot(page, 'diff');
    await page.click('#diff tbody tr');
    await page.waitForFunction(() => /^#\/class\/\d+$/.test(document.getElementById('main').getAttribute('data-ready') || ''));
    check('diff: click-through to instances', (await page.textContent('#class-name')) === d.classes[0].class);
    await page.goBack();
    await navigated(page, '#/diff');
    check('diff: back', true);
  }
  // keyboard view switching
  await page.keyboard.press('2');
  await navigated(page, '#/classes');
  await page.keyboard.press('/');
  check('keyboard: / focuses go-to', await page.evaluate(() => document.activeElement.id === 'goto-input'));
  await page.keyboard.type(ref.top.nodes[0].addr);
  await page.keyboard.press('Enter');
  await navigated(page, '#/object/' + ref.top.nodes[0].addr);
  check('keyboard: go to address', (await page.textContent('#obj-addr')) === ref.top.nodes[0].addr);
}

async function hostile(page, v, s) {
  const XSS = '<script>window.__pwned=1</script>', IMG = '<img src=x onerror="window.__pwned=2">';
  const dialogs = [];
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  const top = cliJson('top', s);
  for (const hash of ['#/summary', '#/classes', '#/dominators', '#/object/' + top.nodes[0].addr, '#/object/' + top.nodes[1].addr, '#/leaks', '#/cycles']) {
    await visit(page, v, hash);
    if (hash === '#/dominators') { await page.keyboard.press('j'); await page.keyboard.press('ArrowRight'); await page.waitForTimeout(150); }
    const st = await page.evaluate(() => ({pwned: window.__pwned, scripts: [...document.scripts].filter((s) => !/^(util|app)\.js$/.test(s.getAttribute('src') || '')).length, imgs: [...document.images].filter((i) => i.getAttribute('src') === 'x').length, text: document.body.textContent}));
    check('hostile ' + hash + ': no script ran', st.pwned === undefined && st.scripts === 0 && st.imgs === 0, st.pwned);
    if (hash === '#/summary') {
      check('hostile: process name shown as text', (await page.textContent('h1')).startsWith(XSS));
      check('hostile: region name shown as text', st.text.includes(IMG));
      await shot(page, 'hostile-summary');
    }
    if (hash === '#/classes') {
      check('hostile: class names shown as text', eq((await texts(page, '#classes tbody tr td:first-child a')).sort(), ['"quoted" & \'amp\' \\ </td>', XSS, IMG].sort()));
      await shot(page, 'hostile-classes');
    }
    if (hash.startsWith('#/object/') && hash.endsWith(top.nodes[0].addr)) {
      check('hostile: field name shown as text', (await texts(page, '#out tbody td:nth-child(2)')).includes(XSS));
    }
  }
  check('hostile: no dialogs', dialogs.length === 0, dialogs);
}

async function demo(page, v, s) {
  await visit(page, v, '#/summary');
  const regions = cliLines('regions', s).filter((r) => !r.total);
  const cells = await page.$$eval('#treemap .tm', (c) => c.length);
  check('demo summary: treemap of the regions', cells > 3 && cells <= Math.min(60, regions.length), [cells, regions.length]);
  await shot(page, 'demo-summary');
  await page.click('button[data-metric=resident]');
  const titles = await page.$$eval('#treemap .tm', (c) => c.map((e) => e.getAttribute('title').split('\n')[0]));
  const byRes = regions.filter((r) => r.resident > 0).sort((a, b) => b.resident - a.resident).slice(0, 60).map((r) => r.name);
  check('demo summary: treemap by resident size', eq(titles, byRes), [titles, byRes]);
  const ref = {cls: cliJson('classes', s), topAll: cliJson('top', s, '-n', '100000'), top: cliJson('top', s, '-n', '5')};
  if (!ref.top.nodes.length) {
    // Under ASan the demo's blocks come from ASan's allocator, which the glibc
    // heap walk does not see: the snapshot has regions but no heap blocks.
    console.log('note: the demo snapshot has no heap blocks (sanitizer build); heap views checked on the fixtures only');
    await visit(page, v, '#/classes');
    check('demo classes: empty table for a heapless snapshot', (await page.$$('#classes tbody tr')).length === 0);
    return;
  }
  await visit(page, v, '#/classes');
  const rows = await page.$$eval('#classes tbody tr', (trs) => trs.map((tr) => ({cls: tr.getAttribute('data-class'), count: Number(tr.querySelector('[data-f=count] [data-v]').getAttribute('data-v')), retained: Number(tr.querySelector('[data-f=retained] [data-v]').getAttribute('data-v'))})));
  const cliCls = new Map(ref.cls.filter((r) => r.kind !== null).map((r) => [r.class, r.count]));
  const cliRet = new Map(ref.topAll.classes.map((r) => [r.class, r.retained]));
  check('demo classes: counts = CLI', rows.length > 3 && rows.every((r) => !cliCls.has(r.cls) || cliCls.get(r.cls) === r.count), rows.slice(0, 5));
  check('demo classes: retained = CLI', rows.every((r) => !cliCls.has(r.cls) || (cliRet.get(r.cls) || 0) === r.retained));
  await shot(page, 'demo-classes');
  await visit(page, v, '#/dominators');
  await shot(page, 'demo-dominators');
  const leaks = cliJson('leaks', s);
  await visit(page, v, '#/leaks');
  const addrs = await page.$$eval('#leaks tbody tr[data-addr]', (t) => t.map((e) => e.getAttribute('data-addr')));
  check('demo leaks = CLI', eq(addrs, leaks.leaks.map((l) => l.addr)));
  await shot(page, 'demo-leaks');
  await visit(page, v, '#/object/' + ref.top.nodes[0].addr);
  await shot(page, 'demo-object');
}

// ---- allocation stacks
// `heapgraph stacks --tree ORDER --by count`'s first level: [count, function] sorted.
function cliTreeRoots(s, order) {
  const out = execFileSync(cli, ['stacks', s, '--tree', order, '--by', 'count'], {encoding: 'utf8'});
  const roots = [];
  for (const l of out.split('\n').slice(1)) {
    const m = l.match(/^(\d+)\s+[\d.]+ \S+\s+[\d.]+ \S+\s+(.*)$/);
    if (!m) continue;
    // "fn (file:line)" or "fn+0x12 (image)"; "image+0x10" or "0x7f…" have no function
    const fn = m[2].match(/^(\S+?)(?:\+0x[0-9a-f]+)? \(/);
    roots.push([Number(m[1]), fn ? fn[1] : '']);
  }
  return roots.sort();
}
// The API's stacks answers against the CLI for snapshot s (which has stacks).
async function stacksApi(v, s) {
  const same = (name, a, b) => check('API ' + name + ' = CLI', eq(a, b), {api: a, cli: b});
  for (const by of ['retained', 'bytes', 'count'])
    same('stacks --by ' + by + ' (' + path.basename(s) + ')', await apiJson(v, 'stacks?n=1000&by=' + by), cliJson('stacks', s, '--by', by));
  const all = cliJson('stacks', s);
  const page = await apiJson(v, 'stacks?n=2&offset=1');
  check('API stacks: a page is a slice of the CLI list', eq(page.stacks, all.stacks.slice(1, 3)) && page.total === all.stacks.length, page);
  check('API stacks: bad by= is 400', (await get(v, '/api/stacks?by=size')).status === 400);
  for (const st of all.stacks.slice(0, 3)) {
    const one = await apiJson(v, 'stack?id=' + st.id + '&n=1000');
    const entry = {...one};
    for (const k of ['sort', 'total', 'rows']) delete entry[k];
    check('API stack ' + st.id + ': the CLI entry', eq(entry, st), [entry, st]);
    check('API stack ' + st.id + ': its blocks, largest first', one.total === st.nodes && one.rows.length === st.nodes &&
      one.rows.every((x, i) => !i || one.rows[i - 1].size >= x.size) && one.rows.reduce((a, x) => a + x.size, 0) === st.node_bytes, one);
    for (const x of one.rows.slice(0, 2)) check('API stack ' + st.id + ': block ' + x.addr + ' has that stack (CLI show)', cliJson('show', s, x.addr).node.stack.id === st.id);
    const byRet = await apiJson(v, 'stack?id=' + st.id + '&n=1000&sort=retained');
    check('API stack ' + st.id + ': sort=retained', byRet.rows.every((x, i) => !i || byRet.rows[i - 1].retained >= x.retained) && byRet.total === one.total);
  }
  check('API stack: no such stack is 404', (await get(v, '/api/stack?id=999999')).status === 404);
  for (const order of ['bottom-up', 'top-down']) {
    const t = await apiJson(v, 'stacktree?order=' + order + '&by=count&n=1000');
    const roots = t.children.map((c) => [c.count, c.frames[0].function || '']).sort();
    check('API stacktree ' + order + ': first level = CLI --tree', eq(roots, cliTreeRoots(s, order)), [roots, cliTreeRoots(s, order)]);
    const sum = t.children.reduce((a, c) => a + c.count, 0);
    check('API stacktree ' + order + ': counts add up to the listed stacks', sum === all.stacks.reduce((a, x) => a + x.count, 0));
  }
  return all;
}
const fnsOf = (frames) => frames.map((f) => f.function || '');

// A snapshot recorded by `heapgraph run --stacks` (tests/stacks/sites.c).
async function stacksWalk(page, v, s) {
  const all = await stacksApi(v, s);
  await visit(page, v, '#/stacks');
  const ids = await page.$$eval('#stacks tbody tr[data-stack]', (t) => t.map((e) => Number(e.getAttribute('data-stack'))));
  check('stacks view: rows = CLI stacks (by retained)', eq(ids, all.stacks.slice(0, 50).map((x) => x.id)), [ids, all.stacks.map((x) => x.id)]);
  check('stacks view: retained = CLI', eq(await vals(page, '#stacks [data-f=retained] [data-v]'), all.stacks.slice(0, 50).map((x) => x.retained)));
  await page.click('#stacks th[data-sort=count]');
  await navigated(page, '#/stacks?by=count');
  const byCount = cliJson('stacks', s, '--by', 'count');
  check('stacks view: sort by count = CLI --by count', eq(await page.$$eval('#stacks tbody tr[data-stack]', (t) => t.map((e) => Number(e.getAttribute('data-stack')))), byCount.stacks.slice(0, 50).map((x) => x.id)));
  check('stacks view: counts = CLI', eq(await vals(page, '#stacks [data-f=count] [data-v]'), byCount.stacks.slice(0, 50).map((x) => x.count)));
  await page.click('#stacks th[data-sort=bytes]');
  await navigated(page, '#/stacks?by=bytes');
  const b = await vals(page, '#stacks [data-f=bytes] [data-v]');
  check('stacks view: sort by bytes', b.length && b.every((x, i) => !i || b[i - 1] >= x), b);
  // expand site_a's stack: its frames, innermost first, as the CLI symbolizes them
  const sa = all.stacks.find((x) => x.frames.length && x.frames[0].function === 'site_a');
  check('stacks: site_a recorded', !!sa);
  if (!sa) return;
  await page.click(`#stacks tr[data-stack="${sa.id}"] td:nth-child(2)`);
  await page.waitForSelector('#stacks tr.detail:not([hidden]) .frames li');
  const shown = await page.$$eval('#stacks tr.detail:not([hidden]) .frames li', (l) => l.map((e) => e.getAttribute('data-function')));
  check('stacks view: expanded frames = CLI frames', eq(shown, fnsOf(sa.frames)), [shown, sa.frames]);
  check('stacks view: site_a called from a_mid', shown[0] === 'site_a' && shown[1] === 'a_mid', shown);
  check('stacks view: file:line shown', (await page.textContent('#stacks tr.detail:not([hidden]) .frames li .where')).includes('sites.c:'));
  const blocks = await page.$$eval('#stacks tr.detail:not([hidden]) table.blocks tbody tr', (t) => t.map((e) => e.getAttribute('data-addr')));
  check('stacks view: the stack\'s blocks (first 10 of 100)', blocks.length === 10 && !!(await page.$('#stacks tr.detail:not([hidden]) a.all-blocks')), blocks);
  await shot(page, 'stacks');
  // into the block: the object view shows the same stack
  await page.click('#stacks tr.detail:not([hidden]) table.blocks tbody a.addr');
  await navigated(page, '#/object/' + blocks[0]);
  check('object: allocation stack = CLI show', eq(await page.$$eval('#obj-frames li', (l) => l.map((e) => e.getAttribute('data-function'))), fnsOf(cliJson('show', s, blocks[0]).node.stack.frames)));
  check('object: link to its stack', (await page.textContent('#obj-stack-link')) === 'stack #' + sa.id);
  await shot(page, 'stacks-object');
  await page.click('#obj-stack-link');
  await navigated(page, '#/stack/' + sa.id);
  const sizes = await vals(page, '#stack-blocks [data-f=size] [data-v]');
  check('stack page: all 100 blocks, largest first', sizes.length === sa.nodes && sizes.every((x, i) => !i || sizes[i - 1] >= x), sizes);
  check('stack page: frames', eq(await page.$$eval('#stack-frames li', (l) => l.map((e) => e.getAttribute('data-function'))), fnsOf(sa.frames)));
  await shot(page, 'stack');
  // bottom-up tree: the allocating functions first; expand site_a to its caller
  await visit(page, v, '#/stacks?mode=bottom-up');
  const rootsShown = await page.$$eval('#stacktree tr[data-depth="0"]', (t) => t.map((e) => [Number(e.querySelector('[data-f=count] [data-v]').getAttribute('data-v')), e.getAttribute('data-function')]));
  check('stacks tree: first level = CLI --tree bottom-up', eq(rootsShown.sort(), cliTreeRoots(s, 'bottom-up')), rootsShown);
  await page.click('#stacktree tr[data-depth="0"][data-function="site_a"] td:nth-child(2)');
  await page.waitForSelector('#stacktree tr[data-depth="1"]');
  check('stacks tree: site_a expands to a_mid', eq(await page.$$eval('#stacktree tr[data-depth="1"]', (t) => t.map((e) => e.getAttribute('data-function'))), ['a_mid']));
  await shot(page, 'stacks-tree');
  await page.keyboard.press('4');
  await navigated(page, '#/stacks');
  check('keyboard: 4 opens stacks', await page.evaluate(() => document.querySelector('#tabs a.on').dataset.tab === 'stacks'));
}

// The writer-made sampled snapshot (tests/viewer/mkstacks.c): estimates, and
// blocks that were not sampled.
async function sampledWalk(page, v, s) {
  const all = await stacksApi(v, s);
  check('sampled: stacks listed (the freed one left out)', eq(all.stacks.map((x) => x.id), [1, 2]), all.stacks);
  await visit(page, v, '#/summary');
  check('sampled: summary card counts the stacks', eq(await vals(page, '[data-card="Allocation stacks"] .v [data-v]'), [2]));
  await visit(page, v, '#/stacks');
  check('sampled: the view says counts are estimates', (await page.textContent('#sampled')).includes('estimates'));
  check('sampled: rows', eq(await page.$$eval('#stacks tbody tr[data-stack]', (t) => t.map((e) => Number(e.getAttribute('data-stack')))), [1, 2]));
  await page.click('#stacks tr[data-stack="2"] td:nth-child(2)');
  await page.waitForSelector('#stacks tr.detail:not([hidden]) .frames li');
  const hostileFrame = (await texts(page, '#stacks tr.detail:not([hidden]) .frames li .fn'))[2];
  check('sampled: an image path with markup shown as text', hostileFrame === '<img src=x onerror="window.__pwned=3">.so+0x10', hostileFrame);
  check('sampled: no script ran', await page.evaluate(() => window.__pwned === undefined && ![...document.images].some((i) => i.getAttribute('src') === 'x')));
  await shot(page, 'stacks-sampled');
  await visit(page, v, '#/object/0x10000');
  check('sampled: block stack', eq(await page.$$eval('#obj-frames li', (l) => l.map((e) => e.getAttribute('data-function'))), ['widget_new', 'cache_fill', 'main']));
  await visit(page, v, '#/object/0x14000');
  const why = await page.textContent('#obj-no-stack');
  check('sampled: an unsampled block says why it has no stack', /sampled mode/.test(why), why);
  await shot(page, 'object-not-sampled');
  await visit(page, v, '#/stack/1');
  check('sampled: stack page blocks, largest first', eq(await texts(page, '#stack-blocks tbody a.addr'), ['0x10000', '0x16000']));
}

// A snapshot without stacks says so.
async function noStacks(page, v, s) {
  check('API stacks without stacks: 404', (await get(v, '/api/stacks')).status === 404);
  await visit(page, v, '#/summary');
  check('no stacks: no summary card', !(await page.$('[data-card="Allocation stacks"]')));
  await visit(page, v, '#/stacks');
  check('no stacks: the view says so', (await page.textContent('#no-stacks')).includes('no allocation stacks'));
  await shot(page, 'stacks-none');
  await visit(page, v, '#/object/' + cliJson('top', s).nodes[0].addr);
  check('no stacks: the block panel says so', (await page.textContent('#obj-no-stack')).includes('no allocation stacks'));
}

// 3,000 stacks (mkstacks.c N): the table pages, the tree shows at most 200 children.
async function manyStacks(page, v, s) {
  const all = cliJson('stacks', s);
  check('many: CLI lists 3000', all.total === 3000 && all.stacks.length === 3000);
  const last = await apiJson(v, 'stacks?n=50&offset=2950');
  check('API stacks: last page = CLI slice', eq(last.stacks, all.stacks.slice(2950)) && last.total === 3000);
  const big = await apiJson(v, 'stacks?n=100000');
  check('API stacks: n is capped at 1000', big.stacks.length === 1000);
  await visit(page, v, '#/stacks');
  check('many: first page of 50', (await page.$$('#stacks tbody tr[data-stack]')).length === 50);
  check('many: pager', (await page.textContent('.pager')).includes('1–50 of 3,000'));
  await page.click('.pager button[data-page=next]');
  await navigated(page, '#/stacks?offset=50');
  check('many: next page = CLI stacks 51-100', eq(await page.$$eval('#stacks tbody tr[data-stack]', (t) => t.map((e) => Number(e.getAttribute('data-stack')))), all.stacks.slice(50, 100).map((x) => x.id)));
  await page.click('#stacks tbody tr[data-stack] td:nth-child(2)');
  await page.waitForSelector('#stacks tr.detail:not([hidden]) .frames li');
  check('many: a frame in no image shows its address', eq(await texts(page, '#stacks tr.detail:not([hidden]) .frames li .fn'), ['widget_new', all.stacks[50].frames[1].offset]));
  await visit(page, v, '#/stacks?mode=bottom-up');
  const root = await page.$eval('#stacktree tr[data-depth="0"]', (e) => e.textContent);
  check('many: bottom-up root merges all 3000 stacks', root.includes('widget_new') && root.includes('3,000 stacks'), root);
  await page.click('#stacktree tr[data-depth="0"] td:nth-child(2)');
  await page.waitForSelector('#stacktree tr[data-depth="1"]');
  check('many: 200 children shown, the rest counted', (await page.$$('#stacktree tr[data-depth="1"]')).length === 200 && (await page.textContent('#stacktree')).includes('2,800 smaller frames not shown'));
  await shot(page, 'stacks-many');
}

(async () => {
  let browser, profile;
  try {
    const fx = await startViewer([snap('app2.hgsnap'), snap('app.hgsnap')]);
    check('URL is the first line of stdout', /^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{32}$/.test(fx.url), fx.url);
    await security(fx);
    const ref = await apiMatchesCli(fx, snap('app2.hgsnap'), snap('app.hgsnap'));
    // without --no-open: xdg-open gets the URL; without xdg-open the viewer still serves
    const bin = fs.mkdtempSync(path.join(require('os').tmpdir(), 'hg-viewer-bin-')), opened = path.join(bin, 'opened');
    fs.writeFileSync(path.join(bin, 'xdg-open'), '#!/bin/sh\nprintf %s "$1" > "' + opened + '"\n', {mode: 0o755});
    const op = await startViewer([snap('app.hgsnap')], {...process.env, PATH: bin + ':' + process.env.PATH});
    for (let i = 0; i < 100 && !fs.existsSync(opened); i++) await new Promise((r) => setTimeout(r, 50));
    check('xdg-open gets the URL', fs.existsSync(opened) && fs.readFileSync(opened, 'utf8') === op.url);
    const np = await startViewer([snap('app.hgsnap')], {...process.env, PATH: path.join(bin, 'none')});
    check('no xdg-open: still serves', (await get(np, '/api/summary')).status === 200);
    await new Promise((r) => setTimeout(r, 100));
    check('no xdg-open: says so on stderr', /no xdg-open/.test(np.err || ''), np.err);
    fs.rmSync(bin, {recursive: true, force: true});
    const dm = await startViewer([snap('demo.hgsnap')]);
    await apiMatchesCli(dm, snap('demo.hgsnap'), null);
    const hx = await startViewer([snap('hostile.hgsnap')]);
    const sm = await startViewer([snap('sampled.hgsnap')]);
    const mn = await startViewer([snap('many.hgsnap')]);
    await apiMatchesCli(sm, snap('sampled.hgsnap'), null);
    // `heapgraph run --stacks` records nothing under ASan (test_viewer.sh makes no such snapshot then)
    const haveStacks = fs.existsSync(snap('stacks.hgsnap'));
    const st = haveStacks ? await startViewer([snap('stacks.hgsnap')]) : null;
    if (st) await apiMatchesCli(st, snap('stacks.hgsnap'), null);
    else console.log('note: no run --stacks snapshot (sanitizer build): stacks checked on the sampled fixture only');
    // a fresh profile directory every run (--user-data-dir, passed the way playwright wants it)
    profile = fs.mkdtempSync(path.join(require('os').tmpdir(), 'hg-viewer-profile-'));
    browser = await chromium.launchPersistentContext(profile, {executablePath: '/usr/bin/chromium', headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: {width: 1400, height: 900}, colorScheme: 'light'});
    const page = browser.pages()[0] || await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await walkFixture(page, fx, snap('app2.hgsnap'), snap('app.hgsnap'), ref);
    await demo(page, dm, snap('demo.hgsnap'));
    await hostile(page, hx, snap('hostile.hgsnap'));
    await noStacks(page, fx, snap('app2.hgsnap'));
    await sampledWalk(page, sm, snap('sampled.hgsnap'));
    await manyStacks(page, mn, snap('many.hgsnap'));
    if (st) await stacksWalk(page, st, snap('stacks.hgsnap'));
    const real = errors.filter((e) => !/favicon/.test(e));
    check('no page errors', real.length === 0, real);
  } catch (e) {
    check('exception', false, String(e.stack || e));
  } finally {
    if (browser) await browser.close();
    if (profile) fs.rmSync(profile, {recursive: true, force: true});
    await stopAll(true);
  }
  console.log(`viewer: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})();
