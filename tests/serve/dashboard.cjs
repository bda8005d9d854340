// tests/serve/dashboard.cjs — the read side of `heapgraph serve` end to end
// over real HTTP: uploads the fleet test app's snapshots (tests/fleet: two
// versions, six devices, planted issues), waits for the workers, then checks
// that the issues API answers the objects `heapgraph fleet --json` prints
// for the same files (equal per issue after parsing, in the same order),
// with the kind/status filters, the growth and tree answers, the issue
// detail and the read auth (Bearer read key, login cookie, upload keys and
// other apps' keys refused, security headers); then Chromium (playwright-
// core) walks every dashboard page — login, apps, issues (filters), an
// issue, version comparison — and opens an exemplar in the snapshot viewer.
// Screenshots land in SHOTDIR.
// Then a second app whose snapshots carry HTML/JS in their version, device
// model and class names: every page shows them as text, no script runs.
// With HG_DASH_DB=postgres://… the server and its keys use that database
// instead of SQLite; HG_DASH_BROWSER=0 leaves out the Chromium part.
//   node dashboard.cjs CLI SNAPDIR WORKDIR SHOTDIR PLAYWRIGHT_CORE_DIR HOSTILE.hgsnap...
'use strict';
const {spawn, execFileSync} = require('child_process');
const http = require('http');
const fs = require('fs');
const path = require('path');

const [cli, snapdir, work, shots, pwdir, ...hostileSnaps] = process.argv.slice(2);
const DB = process.env.HG_DASH_DB ? ['--db', process.env.HG_DASH_DB] : [];
const BROWSER = process.env.HG_DASH_BROWSER !== '0';
const {chromium} = require(pwdir);
fs.mkdirSync(shots, {recursive: true});

let passed = 0, failed = 0;
function check(name, ok, detail) {
  if (ok) passed++;
  else { failed++; console.log('FAIL ' + name + (detail !== undefined ? ': ' + JSON.stringify(detail).slice(0, 800) : '')); }
}
const eq = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function request(url, opts, body) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const rq = http.request({host: u.hostname, port: u.port, path: u.pathname + u.search, method: opts.method || 'GET', headers: opts.headers || {}}, (r) => {
      const chunks = [];
      r.on('data', (d) => chunks.push(d));
      r.on('end', () => resolve({status: r.statusCode, headers: r.headers, body: Buffer.concat(chunks).toString('utf8')}));
    });
    rq.on('error', reject);
    if (body) rq.write(body);
    rq.end();
  });
}
const bearer = (k) => ({Authorization: 'Bearer ' + k});
async function getJson(base, p, key) {
  const r = await request(base + p, {headers: key ? bearer(key) : {}});
  let j = null;
  try { j = JSON.parse(r.body); } catch (e) { /* checked by the caller */ }
  return {status: r.status, json: j, body: r.body, headers: r.headers};
}
function cliRows(args) {
  const out = execFileSync(cli, ['fleet', ...args, '--json'], {encoding: 'utf8', maxBuffer: 1 << 26});
  return out.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}
function cliJson(args) { return JSON.parse(execFileSync(cli, ['fleet', ...args, '--json'], {encoding: 'utf8', maxBuffer: 1 << 26})); }

let server = null;
function startServer(data) {
  return new Promise((resolve, reject) => {
    const p = spawn(cli, ['serve', '--data', data, ...DB, '--host', '127.0.0.1', '--port', '0', '--workers', '1'], {stdio: ['ignore', 'pipe', 'pipe']});
    server = p;
    let buf = '';
    p.stdout.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0 && !p.url) { p.url = buf.slice(0, nl).trim().replace(/\/$/, ''); resolve(p); }
    });
    p.stderr.on('data', (d) => { p.err = ((p.err || '') + d).slice(-20000); });
    p.on('exit', (code) => { if (!p.url) reject(new Error('serve exited ' + code + ': ' + p.err)); });
  });
}
function keyAdd(data, app, read) {
  const out = execFileSync(cli, ['serve', 'key', 'add', app, ...(read ? ['--read'] : []), '--data', data, ...DB], {encoding: 'utf8'});
  return out.trim().split('\n').pop().trim();
}

async function shot(page, name) { await page.screenshot({path: path.join(shots, name + '.png'), fullPage: true}); }
async function ready(page, hash) {
  await page.waitForFunction((h) => document.getElementById('main').getAttribute('data-ready') === h, hash, {timeout: 15000});
  await page.waitForTimeout(80);
  const text = await page.textContent('main');
  check(hash + ': no [object …], undefined, NaN or error shown', !/\[object |undefined|NaN/.test(text) && !(await page.$('main .err:not([hidden])')), text.slice(0, 300));
}

async function main() {
  const APP = 'fleet-app', OTHER = 'other-app';
  const data = path.join(work, 'data');
  fs.rmSync(work, {recursive: true, force: true});
  fs.mkdirSync(data, {recursive: true});
  const upKey = keyAdd(data, APP, false), readKey = keyAdd(data, APP, true), otherRead = keyAdd(data, OTHER, true);
  const HOSTILE = 'hostile-app', hUp = keyAdd(data, HOSTILE, false), hRead = keyAdd(data, HOSTILE, true);
  check('keys printed', [upKey, readKey, otherRead].every((k) => /^hgk_/.test(k)), [upKey, readKey, otherRead]);
  await startServer(data);
  const base = server.url;

  // ---- upload, in a fixed order (the order `heapgraph fleet` gets the files)
  const files = fs.readdirSync(snapdir).filter((f) => f.endsWith('.hgsnap')).sort();
  const ids = path.join(work, 'ids');
  fs.mkdirSync(ids, {recursive: true});
  const byId = [];
  for (const f of files) {
    const body = fs.readFileSync(path.join(snapdir, f));
    const r = await request(base + '/v1/snapshots', {method: 'POST', headers: {...bearer(upKey), 'Content-Type': 'application/octet-stream', 'Content-Length': body.length}}, body);
    let id = null;
    try { id = JSON.parse(r.body).id; } catch (e) { /* below */ }
    check('upload ' + f + ': 201 with an id', r.status === 201 && /^[0-9a-f]{16}$/.test(id || ''), [r.status, r.body]);
    if (id) { fs.copyFileSync(path.join(snapdir, f), path.join(ids, id)); byId.push(id); }
  }
  // ---- wait for the analyses (each version's snapshot count in /versions)
  const t0 = Date.now();
  let vers = null;
  for (;;) {
    vers = await getJson(base, '/v1/apps/' + APP + '/versions', readKey);
    const n = vers.json && vers.json.versions ? vers.json.versions.reduce((a, v) => a + v.snapshots, 0) : -1;
    if (n === byId.length || Date.now() - t0 > 240000) break;
    await sleep(300);
  }
  check('every upload analysed', vers.json && vers.json.versions.reduce((a, v) => a + v.snapshots, 0) === byId.length, vers.json);
  console.log('dashboard: ' + byId.length + ' snapshots analysed in ' + ((Date.now() - t0) / 1000).toFixed(1) + ' s');
  check('versions 1.0 and 2.0 with 6 devices each', eq(vers.json.versions.map((v) => [v.version, v.snapshots, v.devices]), [['1.0', byId.length / 2, 6], ['2.0', byId.length / 2, 6]]), vers.json);

  // ---- the issues API = heapgraph fleet --json on the same files
  const paths = byId.map((id) => path.join(ids, id));
  const cliArgs = [...paths, '--cache-dir', path.join(work, 'cache'), '--version', '2.0', '--baseline-version', '1.0'];
  async function issues(q) {
    for (let i = 0; i < 100; i++) { // a stale cache entry answers "pending":1 while it refreshes
      const r = await getJson(base, '/v1/apps/' + APP + '/issues?' + q, readKey);
      if (r.status !== 200 || !r.json.pending) return r;
      await sleep(200);
    }
    return null;
  }
  const all = await issues('version=2.0&baseline=1.0');
  const cliAll = cliRows(cliArgs);
  check('issues API: 200', all && all.status === 200, all && all.body.slice(0, 300));
  check('issues API: as many issues as the CLI', all.json.issues.length === cliAll.length && cliAll.length > 3, [all.json.issues.length, cliAll.length]);
  let same = 0;
  for (let i = 0; i < cliAll.length; i++) same += eq(all.json.issues[i], cliAll[i]);
  check('issues API: every issue object equal to the CLI\'s, same order', same === cliAll.length, {api: all.json.issues.find((x, i) => !eq(x, cliAll[i])), cli: cliAll.find((x, i) => !eq(x, all.json.issues[i]))});
  const planted = cliAll.filter((r) => (r.status === 'new' || r.status === 'regressed') && r.context_of === null && Math.max(r.bytes_median, r.baseline_bytes_median) >= 16384);
  check('the planted issues are there (new/regressed)', planted.length >= 3, planted.map((r) => [r.kind, r.status, r.title]));
  for (const kind of ['leak', 'retention']) {
    const a = await issues('version=2.0&baseline=1.0&kind=' + kind), c = cliRows([...cliArgs, '--kind', kind]);
    check('issues API kind=' + kind + ' = CLI --kind', a && eq(a.json.issues, c) && c.length > 0, [a && a.json.issues.length, c.length]);
  }
  for (const st of ['new', 'regressed', 'ongoing']) {
    const a = await issues('version=2.0&baseline=1.0&status=' + st);
    check('issues API status=' + st + ' = the CLI\'s issues of that status', a && eq(a.json.issues, cliAll.filter((r) => r.status === st)), a && a.json.issues.length);
  }
  const g = await getJson(base, '/v1/apps/' + APP + '/growth?version=2.0&baseline=1.0&n=30', readKey);
  check('growth API = CLI --growth --json', eq(g.json, cliJson([...cliArgs, '--growth'])), g.body.slice(0, 300));
  const t = await getJson(base, '/v1/apps/' + APP + '/tree?version=2.0', readKey);
  check('tree API = CLI --tree --json', eq(t.json, cliJson([...paths, '--cache-dir', path.join(work, 'cache'), '--version', '2.0', '--tree'])), t.body.slice(0, 300));
  const top = planted[0] || cliAll[0];
  const det = await getJson(base, '/v1/apps/' + APP + '/issues/' + top.signature + '?version=2.0&baseline=1.0', readKey);
  check('issue detail: the same object', det.status === 200 && eq(det.json.issue, top), det.body.slice(0, 300));
  check('issue detail: history per version', det.json && eq(det.json.history.map((h) => h.version), ['1.0', '2.0']) && det.json.history[1].bytes_median === top.bytes_median, det.json && det.json.history);
  check('issue detail: exemplars with their ids', det.json && det.json.exemplars.length === top.exemplars.length && det.json.exemplars.every((x, i) => x.id === top.exemplars[i].snapshot && x.file_kept), det.json && det.json.exemplars);
  check('issue detail: unknown signature 404', (await getJson(base, '/v1/apps/' + APP + '/issues/0123456789abcdef?version=2.0', readKey)).status === 404);

  // ---- read auth
  check('no key: 401', (await getJson(base, '/v1/apps/' + APP + '/issues')).status === 401);
  check('upload key cannot read: 401', (await getJson(base, '/v1/apps/' + APP + '/issues', upKey)).status === 401);
  check('wrong key: 401', (await getJson(base, '/v1/apps/' + APP + '/issues', readKey.slice(0, -2) + 'zz')).status === 401);
  check('another app\'s read key: 403', (await getJson(base, '/v1/apps/' + APP + '/issues', otherRead)).status === 403);
  const up = await request(base + '/v1/snapshots', {method: 'POST', headers: {...bearer(readKey), 'Content-Length': 4}}, 'abcd');
  check('read key cannot upload', up.status === 401 || up.status === 403, up.status);
  const apps = await getJson(base, '/v1/apps', readKey);
  check('/v1/apps with a read key: its app', apps.json && eq(apps.json.apps.map((a) => a.app), [APP]), apps.body);
  const noHdr = await request(base + '/login', {method: 'POST', headers: {'Content-Length': readKey.length}}, readKey);
  check('POST /login without X-Hg-Login: 403 (a cross-site form cannot set it)', noHdr.status === 403, noHdr.status);
  const login = await request(base + '/login', {method: 'POST', headers: {'X-Hg-Login': '1', 'Content-Length': readKey.length}}, readKey);
  const sc = String(login.headers['set-cookie'] || '');
  check('login: HttpOnly SameSite=Strict session cookie', login.status === 200 && /hg_serve_session=[0-9a-f]{32}; Path=\/; HttpOnly; SameSite=Strict/.test(sc), [login.status, sc]);
  const cookie = sc.split(';')[0];
  const viaCookie = await request(base + '/v1/apps/' + APP + '/versions', {headers: {Cookie: cookie}});
  check('cookie reads its app', viaCookie.status === 200);
  check('cookie: another app 403', (await request(base + '/v1/apps/' + OTHER + '/versions', {headers: {Cookie: cookie}})).status === 403);
  check('forged cookie: 401', (await request(base + '/v1/apps/' + APP + '/versions', {headers: {Cookie: 'hg_serve_session=' + '0'.repeat(32)}})).status === 401);
  const badLogin = await request(base + '/login', {method: 'POST', headers: {'X-Hg-Login': '1', 'Content-Length': upKey.length}}, upKey);
  check('login with an upload key: 401', badLogin.status === 401, badLogin.status);
  const link = await request(base + '/login?key=' + readKey, {});
  check('GET /login?key= (a link) sets no cookie: 303 to the login form with the key in the fragment (login CSRF)',
    link.status === 303 && !link.headers['set-cookie'] && link.headers.location === '/#/login?key=' + readKey, [link.status, link.headers]);
  const junk = await request(base + '/login?key=' + encodeURIComponent('hgk_00_"><script>x</script>'), {});
  check('GET /login with a malformed key passes nothing on', junk.status === 303 && junk.headers.location === '/#/login', junk.headers.location);
  const page = await request(base + '/', {});
  check('dashboard: CSP and security headers', /default-src 'none'; script-src 'self'/.test(page.headers['content-security-policy'] || '') && page.headers['x-frame-options'] === 'DENY' && page.headers['x-content-type-options'] === 'nosniff', page.headers);
  for (const p of ['/../../etc/passwd', '/%2e%2e/%2e%2e/etc/passwd', '/server/pages/dash.js', '/v1/apps/' + APP + '/snapshots/' + byId[0] + '/view/../../../../etc/passwd'])
    check('traversal ' + p + ' refused', !(await request(base + p, {headers: {Cookie: cookie}})).body.includes('root:x:0'));
  const ex = det.json.exemplars[0].id;
  check('exemplar viewer needs a session', (await request(base + '/v1/apps/' + APP + '/snapshots/' + ex + '/view/api/summary', {})).status === 401);
  const vs = await request(base + '/v1/apps/' + APP + '/snapshots/' + ex + '/view/api/summary', {headers: {Cookie: cookie}});
  check('exemplar viewer API answers', vs.status === 200 && JSON.parse(vs.body).nodes_total > 0, vs.body.slice(0, 200));
  const vinfo = JSON.parse((await request(base + '/v1/apps/' + APP + '/snapshots/' + ex + '/view/api/top?n=5', {headers: {Cookie: cookie}})).body);
  check('exemplar viewer top = CLI top on the same file', eq(vinfo, JSON.parse(execFileSync(cli, ['top', path.join(ids, ex), '-n', '5', '--json'], {encoding: 'utf8'}))));

  console.log('dashboard: the API on ' + (DB.length ? 'PostgreSQL' : 'SQLite') + ' checked');
  if (!BROWSER) return;
  // ---- Chromium over every page
  const browser = await chromium.launch({executablePath: '/usr/bin/chromium', args: ['--no-sandbox']});
  const ctx = await browser.newContext({viewport: {width: 1400, height: 900}});
  const pg = await ctx.newPage();
  const errors = [];
  pg.on('pageerror', (e) => errors.push(String(e)));
  pg.on('console', (m) => { if (m.type() === 'error' && !/status of 401/.test(m.text())) errors.push(m.text()); }); // the first visit, before the login, is refused
  await pg.goto(base + '/');
  await ready(pg, '#/apps');
  check('page: without a session, the login form', !!(await pg.$('#login')));
  await shot(pg, 'login');
  await pg.fill('#key', readKey);
  await pg.click('#login button');
  await ready(pg, '#/apps');
  check('page apps: lists the app', eq(await pg.$$eval('#apps [data-app]', (e) => e.map((x) => x.getAttribute('data-app'))), [APP]));
  await shot(pg, 'apps');
  await pg.click(`#apps [data-app="${APP}"]`);
  await ready(pg, '#/issues/' + APP);
  const defaultRows = await pg.$$eval('#issues tbody tr', (t) => t.map((e) => e.getAttribute('data-signature')));
  check('page issues: ranked as the API (version 2.0 vs 1.0 by default)', eq(defaultRows, cliAll.map((r) => r.signature)), [defaultRows.length, cliAll.length]);
  check('page issues: status badges', eq(await pg.$$eval('#issues tbody tr td:nth-child(2) .st[data-status]:first-child', (e) => e.map((x) => x.getAttribute('data-status'))), cliAll.map((r) => r.status)));
  await shot(pg, 'issues');
  await pg.selectOption('#kind', 'leak');
  await ready(pg, '#/issues/' + APP + '?version=2.0&baseline=1.0&kind=leak');
  check('page issues: kind filter', eq(await pg.$$eval('#issues tbody tr', (t) => t.map((e) => e.getAttribute('data-kind'))), cliAll.filter((r) => r.kind === 'leak').map(() => 'leak')));
  await pg.selectOption('#kind', '');
  await ready(pg, '#/issues/' + APP + '?version=2.0&baseline=1.0');
  await pg.selectOption('#status', 'new');
  await ready(pg, '#/issues/' + APP + '?version=2.0&baseline=1.0&status=new');
  const newRows = await pg.$$eval('#issues tbody tr', (t) => t.map((e) => e.getAttribute('data-signature')));
  check('page issues: status filter', eq(newRows, cliAll.filter((r) => r.status === 'new').map((r) => r.signature)) && newRows.length > 0, newRows);
  await shot(pg, 'issues-new');
  // another version: its baseline becomes the version below it (none for 1.0)
  await pg.selectOption('#version', '1.0');
  await ready(pg, '#/issues/' + APP + '?version=1.0&status=new');
  await pg.selectOption('#status', '');
  await ready(pg, '#/issues/' + APP + '?version=1.0');
  const v1 = cliRows([...paths, '--cache-dir', path.join(work, 'cache'), '--version', '1.0']);
  check('page issues: version 1.0 = CLI --version 1.0', eq(await pg.$$eval('#issues tbody tr', (t) => t.map((e) => e.getAttribute('data-signature'))), v1.map((r) => r.signature)) && v1.length > 0);
  check('page issues: version 1.0 has no baseline', (await pg.$eval('#baseline', (e) => e.value)) === '');
  await pg.goto(base + '/#/issues/' + APP + '?version=2.0&baseline=1.0&status=new');
  await ready(pg, '#/issues/' + APP + '?version=2.0&baseline=1.0&status=new');
  // an issue: the planted one with the biggest impact
  await pg.click(`#issues tr[data-signature="${newRows[0]}"] a`);
  await ready(pg, '#/issue/' + APP + '/' + newRows[0] + '?version=2.0&baseline=1.0');
  const iss = cliAll.find((r) => r.signature === newRows[0]);
  check('page issue: title', (await pg.getAttribute('#issue-title', 'data-raw')) === iss.title);
  check('page issue: the path drawn as a chain', eq(await pg.$$eval('#chain li.step', (e) => e.map((x) => x.getAttribute('data-raw'))), iss.path));
  check('page issue: type names shown demangled', (await pg.textContent('#chain li.holder')) === iss.path[iss.path.length - 1].replace(/^\d+/, ''), await pg.textContent('#chain li.holder'));
  check('page issue: a bar per version', eq(await pg.$$eval('#chart rect[data-version]', (e) => e.map((x) => x.getAttribute('data-version'))), ['1.0', '2.0']));
  check('page issue: devices per version', eq(await pg.$$eval('#history tbody tr', (t) => t.map((e) => Number(e.querySelector('[data-f=devices] [data-v]').getAttribute('data-v')))), [0, iss.devices]), iss.devices);
  check('page issue: exemplars', (await pg.$$('#exemplars a.open')).length === iss.exemplars.length);
  await shot(pg, 'issue');
  // a regressed one too (the grown holder)
  const reg = cliAll.find((r) => r.status === 'regressed' && r.context_of === null);
  if (reg) {
    await pg.goto(base + '/#/issue/' + APP + '/' + reg.signature + '?version=2.0&baseline=1.0');
    await ready(pg, '#/issue/' + APP + '/' + reg.signature + '?version=2.0&baseline=1.0');
    check('page issue (regressed): two bars', (await pg.$$('#chart rect[data-version]')).length === 2);
    await shot(pg, 'issue-regressed');
    await pg.goBack();
  }
  // open an exemplar in the snapshot viewer
  await pg.goto(base + '/#/issue/' + APP + '/' + newRows[0] + '?version=2.0&baseline=1.0');
  await ready(pg, '#/issue/' + APP + '/' + newRows[0] + '?version=2.0&baseline=1.0');
  const exId = await pg.$eval('#exemplars a.open', (a) => a.getAttribute('data-open'));
  await pg.click('#exemplars a.open');
  await pg.waitForFunction(() => document.getElementById('main') && document.getElementById('main').getAttribute('data-ready') === '#/summary', null, {timeout: 30000}).catch(() => {});
  check('exemplar opens in the viewer', pg.url().includes('/snapshots/' + exId + '/view/') && !!(await pg.$('#top-classes')), pg.url());
  const info = JSON.parse(execFileSync(cli, ['info', path.join(ids, exId), '--json'], {encoding: 'utf8'}));
  check('viewer: the exemplar\'s process', (await pg.textContent('h1')).startsWith(info.process || '(unknown'));
  await shot(pg, 'exemplar-viewer');
  await pg.goto(pg.url().replace(/#.*$/, '') + '#/classes');
  await pg.waitForFunction(() => document.getElementById('main').getAttribute('data-ready') === '#/classes', null, {timeout: 15000});
  check('viewer: classes of the exemplar', (await pg.$$('#classes tbody tr')).length > 3);
  // version comparison
  await pg.goto(base + '/#/compare/' + APP + '?version=2.0&baseline=1.0');
  await ready(pg, '#/compare/' + APP + '?version=2.0&baseline=1.0');
  const gcls = await pg.$$eval('#growth tbody tr', (t) => t.map((e) => e.getAttribute('data-class')));
  check('page compare: class growth = API', eq(gcls, g.json.classes.map((c) => c.class)), gcls);
  check('page compare: the merged retention icicle', (await pg.$$('#tree .ic')).length > 3);
  await shot(pg, 'compare');
  // ---- hostile strings: a second app, added to the same session
  for (const f of hostileSnaps) {
    const body = fs.readFileSync(f);
    const r = await request(base + '/v1/snapshots', {method: 'POST', headers: {...bearer(hUp), 'Content-Length': body.length}}, body);
    check('upload ' + path.basename(f) + ': 201', r.status === 201, [r.status, r.body]);
  }
  for (let i = 0; i < 200; i++) {
    const v = await getJson(base, '/v1/apps/' + HOSTILE + '/versions', hRead);
    if (v.json && v.json.versions.reduce((a, x) => a + x.snapshots, 0) === hostileSnaps.length) break;
    await sleep(200);
  }
  const XSS = '<script>window.__pwned=1</script>', IMG = '<img src=x onerror="window.__pwned=2">';
  const dialogs = [];
  pg.on('dialog', (dl) => { dialogs.push(dl.message()); dl.dismiss(); });
  const before = (await pg.context().cookies()).map((c) => c.value);
  await pg.goto(base + '/login?key=' + hRead); // a link: the form, filled in, and no login until the click
  await ready(pg, '#/login');
  check('a login link fills the form and leaves the address bar', (await pg.inputValue('#key')) === hRead && !pg.url().includes(hRead), pg.url());
  check('a login link alone changes no cookie', eq((await pg.context().cookies()).map((c) => c.value), before));
  await pg.click('#login button');
  await ready(pg, '#/apps');
  check('a second key adds its app to the session', eq((await pg.$$eval('#apps [data-app]', (e) => e.map((x) => x.getAttribute('data-app')))).sort(), [APP, HOSTILE].sort()));
  const hi = (await getJson(base, '/v1/apps/' + HOSTILE + '/issues', hRead)).json;
  check('hostile: issues answered', hi && hi.version === XSS && hi.issues.length > 0, hi);
  const hostilePages = ['#/issues/' + HOSTILE, '#/compare/' + HOSTILE];
  if (hi && hi.issues.length) hostilePages.push('#/issue/' + HOSTILE + '/' + hi.issues[0].signature);
  for (const hash of hostilePages) {
    await pg.goto(base + '/' + hash);
    await ready(pg, hash);
    const st = await pg.evaluate(() => ({pwned: window.__pwned, scripts: [...document.scripts].map((x) => x.getAttribute('src')), imgs: [...document.images].filter((i) => i.getAttribute('src') === 'x').length, text: document.body.textContent}));
    check('hostile ' + hash + ': no script ran', st.pwned === undefined && eq(st.scripts, ['/util.js', '/dash.js']) && st.imgs === 0, st);
    check('hostile ' + hash + ': the strings shown as text', st.text.includes(XSS), st.text.slice(0, 300));
    await shot(pg, 'hostile-' + hash.split('/')[1]);
  }
  const hex = hi && hi.issues.length && hi.issues[0].exemplars.length ? hi.issues[0].exemplars[0].snapshot : null;
  if (hex) {
    await pg.goto(base + '/v1/apps/' + HOSTILE + '/snapshots/' + hex + '/view/#/summary');
    await pg.waitForFunction(() => document.getElementById('main').getAttribute('data-ready') === '#/summary', null, {timeout: 30000});
    const st = await pg.evaluate(() => ({pwned: window.__pwned, text: document.body.textContent}));
    check('hostile exemplar in the viewer: no script ran, names as text', st.pwned === undefined && st.text.includes(XSS), st.pwned);
  }
  check('hostile: no dialogs', dialogs.length === 0, dialogs);
  check('no script errors in the pages', errors.length === 0, errors);
  await browser.close();
}

main().catch((e) => check('exception', false, String(e.stack || e))).finally(async () => {
  if (server && server.exitCode === null) {
    const done = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await Promise.race([done, sleep(10000)]);
    check('serve exits 0 on SIGTERM, nothing from ASan/UBSan', server.exitCode === 0 && !/Sanitizer|runtime error/.test(server.err || ''), [server.exitCode, server.signalCode, (server.err || '').slice(-600)]);
    if (server.exitCode === null) server.kill('SIGKILL');
  }
  console.log(`dashboard: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
});
