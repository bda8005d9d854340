// server/pages/dash.js — the dashboard of `heapgraph serve`: apps → the
// issues of a version (ranked, status badges, filters) → an issue (its
// retaining path as a chain, bytes per version, devices and versions, its
// exemplars opened in the snapshot viewer) → version comparison (class
// growth, the merged retention icicle). Hash routes; all data from the read
// API (/v1/apps/…) with the session cookie; every string reaches the page
// as a text node (util.js's h()).
'use strict';

const main = $('main');
const KINDS = ['retention', 'leak', 'site', 'large'];
const STATUSES = ['new', 'regressed', 'fixed', 'ongoing'];

class Unauthorized extends Error {}
async function get(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const r = await fetch(path + (q.toString() ? '?' + q : ''), {credentials: 'same-origin'});
  if (r.status === 401) throw new Unauthorized('unauthorized');
  const body = await r.json().catch(() => ({error: 'bad answer (' + r.status + ')'}));
  if (!r.ok) throw new Error(body.error || ('HTTP ' + r.status));
  return body;
}
const appPath = (app, what) => '/v1/apps/' + encodeURIComponent(app) + '/' + what;

function route() {
  const raw = location.hash.replace(/^#\/?/, '') || 'apps';
  const [path, qs] = raw.split('?');
  const parts = path.split('/').map(decodeURIComponent);
  return {page: parts[0], args: parts.slice(1), q: new URLSearchParams(qs || '')};
}
function link(page, args, q) {
  const qs = q ? new URLSearchParams(Object.entries(q).filter(([, v]) => v !== undefined && v !== null && v !== '')).toString() : '';
  return '#/' + [page, ...args.map(encodeURIComponent)].join('/') + (qs ? '?' + qs : '');
}
const go = (page, args, q) => { location.hash = link(page, args, q); };
// Class names in signatures are the snapshot's type names (Itanium
// "8FeedItem", "N2ui4ViewE"); shown as "FeedItem", "ui::View" (the raw
// name stays in the tooltip). Anything that does not parse stays as it is.
function typeName(s) {
  const m = /^N(.*)E$/.exec(s), body = m ? m[1] : s, parts = [];
  let i = 0;
  while (i < body.length) {
    const d = /^\d+/.exec(body.slice(i));
    if (!d || d[0][0] === '0') return s;
    const n = Number(d[0]), id = body.slice(i + d[0].length, i + d[0].length + n);
    if (id.length !== n || !/^[A-Za-z_]\w*$/.test(id)) return s;
    parts.push(id);
    i += d[0].length + n;
  }
  return parts.length && (m || parts.length === 1) ? parts.join('::') : s;
}
const pretty = (text) => String(text).replace(/\b(N?\d+[A-Za-z_][\w]*E?)/g, (w) => typeName(w));
const badge = (s) => h('span', {class: 'st st-' + s, 'data-status': s}, s);
const card = (k, v, d, cls) => h('div', {class: 'card ' + (cls || ''), 'data-card': k}, h('div', {class: 'k'}, k), h('div', {class: 'v'}, v), h('div', {class: 'd'}, d || ''));

// ---- login
function vLogin(box) {
  const input = h('input', {type: 'password', id: 'key', placeholder: 'hgk_…', autocomplete: 'off', spellcheck: 'false'});
  const msg = h('p', {class: 'err', hidden: true});
  const form = h('form', {id: 'login'}, h('h1', {}, 'Log in'), h('p', {class: 'sub'}, 'Paste a read key (', h('code', {}, 'heapgraph serve key add APP --read'), '). The browser keeps a session cookie; the key is not stored.'),
    input, h('button', {type: 'submit'}, 'Log in'), msg);
  // a link (GET /login?key=…) brings the key in the fragment: filled in,
  // dropped from the address bar and history; the user's click logs in
  const linked = route().q.get('key');
  if (linked) { input.value = linked; history.replaceState(null, '', '/#/login'); }
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const r = await fetch('/login', {method: 'POST', credentials: 'same-origin', headers: {'X-Hg-Login': '1'}, body: input.value.trim()});
    if (r.ok) { location.hash = '#/apps'; render(); } else { msg.hidden = false; msg.textContent = 'That is not a valid read key.'; }
  });
  box.append(h('div', {class: 'login'}, form));
}

// ---- apps
async function vApps(box) {
  const d = await get('/v1/apps');
  box.append(h('h1', {}, 'Apps'), h('p', {class: 'sub'}, 'The apps this session may read. ', h('a', {href: '#/login'}, 'Add another key')));
  const list = h('div', {class: 'applist', id: 'apps'});
  for (const a of d.apps)
    list.append(h('a', {class: 'card', href: link('issues', [a.app]), 'data-app': a.app},
      h('div', {class: 'k'}, 'app'), h('div', {class: 'v cls'}, a.app),
      h('div', {class: 'd'}, count(a.snapshots), pl(a.snapshots, ' snapshot'), a.queued ? [' · ', count(a.queued), ' waiting for analysis'] : '', a.quarantined ? [' · ', count(a.quarantined), ' quarantined'] : '')));
  box.append(list);
}

// version and baseline selects (highest version and the one below by default)
function versionTools(app, vs, version, baseline, extra, page) {
  const sel = (id, cur, none) => {
    const s = h('select', {id}, none ? h('option', {value: ''}, none) : '', ...vs.map((v) => h('option', {value: v.version, selected: v.version === cur}, v.version)));
    return s;
  };
  // the API's baseline defaults to the version below: "(none)" only where there is none
  const vSel = sel('version', version), bSel = sel('baseline', baseline, baseline ? null : '(none)');
  // a new version takes the version below it as its baseline again
  const change = () => go(page, [app], {version: vSel.value, baseline: vSel.value === version ? bSel.value : '', ...(extra ? extra() : {})});
  vSel.addEventListener('change', change);
  bSel.addEventListener('change', change);
  return {vSel, bSel, change, tools: [h('label', {}, 'Version', vSel), h('label', {}, 'against', bSel)]};
}
async function versionsOf(app, q) {
  const vs = (await get(appPath(app, 'versions'))).versions;
  const idx = vs.findIndex((v) => v.version === q.get('version'));
  const vi = idx >= 0 ? idx : vs.length - 1;
  const version = vs.length ? vs[vi].version : '';
  const baseline = q.get('baseline') || (vi > 0 ? vs[vi - 1].version : '');
  return {vs, version, baseline};
}
function appTabs(app, page, version, baseline) {
  $('tabs').replaceChildren(
    h('a', {href: '#/apps', 'data-tab': 'apps'}, 'Apps'),
    h('a', {href: link('issues', [app], {version, baseline}), 'data-tab': 'issues', class: page === 'issues' || page === 'issue' ? 'on' : ''}, 'Issues'),
    h('a', {href: link('compare', [app], {version, baseline}), 'data-tab': 'compare', class: page === 'compare' ? 'on' : ''}, 'Compare versions'));
}

// ---- the issues of a version
async function vIssues(box, r) {
  const app = r.args[0];
  const {vs, version, baseline} = await versionsOf(app, r.q);
  appTabs(app, 'issues', version, baseline);
  const kind = r.q.get('kind') || '', status = r.q.get('status') || '';
  box.append(h('h1', {}, h('span', {class: 'cls'}, app), ' · issues'));
  if (!vs.length) { box.append(h('p', {class: 'muted'}, 'No analysed snapshots yet.')); return; }
  const d = await get(appPath(app, 'issues'), {version, baseline, kind, status});
  if (d.pending) setTimeout(() => { if (location.hash.startsWith('#/issues/')) render(); }, 1000);
  const vi = vs.find((v) => v.version === version);
  box.append(h('p', {class: 'sub'}, 'Version ', h('b', {}, version), ': ', count(vi.snapshots), pl(vi.snapshots, ' snapshot'), ' from ', count(vi.devices), pl(vi.devices, ' device'),
    baseline ? [' · compared with ', h('b', {}, baseline)] : ' · no baseline', '. Ranked by impact (devices × median bytes).', d.pending ? h('span', {class: 'badge', id: 'pending'}, 'refreshing') : ''));
  const t = versionTools(app, vs, version, baseline, () => ({kind: kSel.value, status: sSel.value}), 'issues');
  const kSel = h('select', {id: 'kind'}, h('option', {value: ''}, 'all kinds'), ...KINDS.map((k) => h('option', {value: k, selected: k === kind}, k)));
  const sSel = h('select', {id: 'status'}, h('option', {value: ''}, 'every status'), ...STATUSES.map((k) => h('option', {value: k, selected: k === status}, k)));
  kSel.addEventListener('change', t.change);
  sSel.addEventListener('change', t.change);
  box.append(h('div', {class: 'tools'}, t.tools, h('label', {}, 'Kind', kSel), h('label', {}, 'Status', sSel), h('span', {class: 'muted'}, count(d.issues.length), pl(d.issues.length, ' issue'))));
  const counts = {};
  for (const i of d.issues) if (!i.context_of) counts[i.status] = (counts[i.status] || 0) + 1;
  box.append(h('div', {class: 'cards'}, ...STATUSES.map((s) => card(s, count(counts[s] || 0), s === 'new' ? 'not in the baseline' : s === 'regressed' ? 'grew (Mann-Whitney)' : s === 'fixed' ? 'gone since the baseline' : 'unchanged', (s === 'new' || s === 'regressed') && counts[s] ? 'warn' : ''))));
  const max = Math.max(1, ...d.issues.map((i) => i.bytes_median));
  const tb = h('tbody');
  d.issues.forEach((i, n) => {
    const q = {version, baseline};
    tb.append(h('tr', {class: 'click' + (i.context_of ? ' context' : ''), 'data-signature': i.signature, 'data-status': i.status, 'data-kind': i.kind, on: {click: () => go('issue', [app, i.signature], q)}},
      h('td', {class: 'n muted'}, String(n + 1)),
      h('td', {}, badge(i.status), i.context_of ? h('span', {class: 'st st-context', title: 'explained by ' + i.context_of}, 'context') : ''),
      h('td', {}, h('a', {href: link('issue', [app, i.signature], q), class: 'cls', title: i.title}, pretty(i.title)), h('span', {class: 'kindpill'}, i.kind)),
      h('td', {class: 'n', 'data-f': 'devices'}, count(i.devices)),
      h('td', {class: 'n', 'data-f': 'snapshots'}, count(i.snapshots), h('span', {class: 'muted'}, ' · ' + (100 * i.share).toFixed(0) + '%')),
      h('td', {class: 'n', 'data-f': 'median'}, bytes(i.bytes_median)),
      h('td', {class: 'n', 'data-f': 'delta'}, i.baseline_snapshots ? signed(i.bytes_median - i.baseline_bytes_median, bytes) : h('span', {class: 'muted'}, '—')),
      h('td', {class: 'barcell'}, bar(i.bytes_median, max))));
  });
  box.append(h('table', {id: 'issues'}, h('thead', {}, h('tr', {}, h('th', {class: 'n'}, '#'), h('th', {}, 'Status'), h('th', {}, 'Issue'), h('th', {class: 'n'}, 'Devices'), h('th', {class: 'n'}, 'Snapshots'), h('th', {class: 'n'}, 'Median'), h('th', {class: 'n'}, 'vs baseline'), h('th', {}, ''))), tb));
  if (!d.issues.length) box.append(h('p', {class: 'muted'}, 'No issue matches.'));
}

// ---- one issue
function svg(tag, attrs, ...kids) {
  const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const k of kids) e.append(k instanceof Node ? k : String(k));
  return e;
}
function drawChart(el, hist, current) {
  const W = Math.max(300, el.clientWidth - 16), H = 220, pad = 34, n = hist.length;
  const max = Math.max(1, ...hist.map((x) => Math.max(x.bytes_p90, x.bytes_median)));
  const s = svg('svg', {viewBox: `0 0 ${W} ${H}`, id: 'chart-svg'});
  const bw = Math.min(80, (W - pad) / Math.max(1, n) * 0.6);
  hist.forEach((x, i) => {
    const cx = pad + (W - pad) * (i + 0.5) / n, hgt = (H - 2 * pad) * x.bytes_median / max, y = H - pad - hgt;
    const b = svg('rect', {class: 'b' + (x.version === current ? ' cur' : ''), x: cx - bw / 2, y, width: bw, height: Math.max(hgt, 0.5), 'data-version': x.version, 'data-v': x.bytes_median});
    b.append(svg('title', {}, x.version + ': median ' + x.bytes_median.toLocaleString('en-US') + ' B, p90 ' + x.bytes_p90.toLocaleString('en-US') + ' B in ' + x.snapshots + ' snapshots'));
    s.append(b);
    if (x.bytes_p90) { const py = H - pad - (H - 2 * pad) * x.bytes_p90 / max; s.append(svg('line', {class: 'p90', x1: cx - bw / 2, x2: cx + bw / 2, y1: py, y2: py})); }
    s.append(svg('text', {x: cx, y: H - pad + 16, 'text-anchor': 'middle'}, x.version));
    const lb = bytes(x.bytes_median);
    s.append(svg('text', {x: cx, y: y - 6, 'text-anchor': 'middle'}, lb.firstChild.textContent + ' ' + lb.lastChild.textContent));
  });
  s.append(svg('line', {x1: pad, x2: W, y1: H - pad, y2: H - pad, stroke: 'currentColor', 'stroke-opacity': 0.3}));
  el.append(s);
}
async function vIssue(box, r) {
  const [app, sig] = r.args;
  const {version, baseline} = await versionsOf(app, r.q);
  appTabs(app, 'issue', version, baseline);
  const d = await get(appPath(app, 'issues/' + sig), {version, baseline});
  const i = d.issue;
  box.append(h('h1', {id: 'issue-title', title: i.title, 'data-raw': i.title}, pretty(i.title)), h('p', {class: 'sub'}, badge(i.status), ' ', h('span', {class: 'kindpill'}, i.kind), ' · signature ', h('span', {class: 'addr'}, i.signature),
    ' · version ', h('b', {}, version), baseline ? [' against ', h('b', {}, baseline)] : '', ' · ', h('a', {href: link('issues', [app], {version, baseline})}, 'all issues')));
  box.append(h('div', {class: 'cards'},
    card('Devices', count(i.devices), [count(i.snapshots), pl(i.snapshots, ' snapshot'), ' · ', (100 * i.share).toFixed(0) + '% of the version']),
    card('Median', bytes(i.bytes_median), ['p90 ', bytes(i.bytes_p90), ' · max ', bytes(i.bytes_max)], i.status === 'new' || i.status === 'regressed' ? 'warn' : ''),
    card('Baseline', i.baseline_snapshots ? bytes(i.baseline_bytes_median) : '—', [count(i.baseline_snapshots), pl(i.baseline_snapshots, ' snapshot'), i.p_value < 1 ? ' · p = ' + i.p_value : '']),
    card('Versions', count(i.versions.length), [i.first_version, ' → ', i.last_version]),
    card('Impact', count(i.impact), 'devices × median bytes')));
  if (i.context_of) box.append(h('p', {class: 'note'}, 'Context: its growth is explained by ', h('a', {href: link('issue', [app, i.context_of], {version, baseline})}, 'another issue'), ' below it.'));
  const chain = h('ol', {class: 'pathchain', id: 'chain'});
  i.path.forEach((step, k) => {
    if (k) chain.append(h('li', {class: 'arrow', 'aria-hidden': 'true'}, '↓'));
    chain.append(h('li', {class: 'step' + (k === 0 && i.kind === 'retention' ? ' root' : '') + (k === i.path.length - 1 ? ' holder' : ''), 'data-step': k, 'data-raw': step, title: step}, pretty(step)));
  });
  const chartBox = h('div', {class: 'chart', id: 'chart'});
  box.append(h('div', {class: 'cols'},
    h('div', {}, h('h2', {}, i.kind === 'retention' ? 'Retaining path ' : 'Signature ', h('span', {class: 'muted'}, i.kind === 'retention' ? '— from the root to the holder' : '— its parts')), chain),
    h('div', {}, h('h2', {}, 'Bytes per version ', h('span', {class: 'muted'}, '— median (bar) and p90 (line) over the snapshots that have it')), chartBox)));
  afterAttach.push(() => drawChart(chartBox, d.history, version));
  const ht = h('tbody');
  for (const x of d.history)
    ht.append(h('tr', {'data-version': x.version}, h('td', {}, x.version), h('td', {}, x.status ? badge(x.status) : h('span', {class: 'muted'}, 'absent')),
      h('td', {class: 'n', 'data-f': 'devices'}, count(x.devices)), h('td', {class: 'n', 'data-f': 'snapshots'}, count(x.snapshots), h('span', {class: 'muted'}, ' of ' + x.version_snapshots)),
      h('td', {class: 'n', 'data-f': 'median'}, bytes(x.bytes_median)), h('td', {class: 'n'}, bytes(x.bytes_p90)), h('td', {class: 'n'}, bytes(x.bytes_max))));
  const et = h('tbody');
  for (const x of d.exemplars)
    et.append(h('tr', {'data-id': x.id || ''}, h('td', {class: 'addr'}, x.id || x.snapshot), h('td', {}, x.device_model || '—'), h('td', {}, x.version || '—'),
      h('td', {class: 'n', 'data-f': 'bytes'}, bytes(x.bytes)),
      h('td', {}, x.id && x.file_kept ? h('a', {class: 'open', href: appPath(app, 'snapshots/' + x.id + '/view/'), 'data-open': x.id}, 'Open in the viewer') : h('span', {class: 'muted'}, 'file not kept'))));
  box.append(h('div', {class: 'cols'},
    h('div', {}, h('h2', {}, 'Devices and versions'), h('table', {id: 'history'}, h('thead', {}, h('tr', {}, h('th', {}, 'Version'), h('th', {}, 'Status'), h('th', {class: 'n'}, 'Devices'), h('th', {class: 'n'}, 'Snapshots'), h('th', {class: 'n'}, 'Median'), h('th', {class: 'n'}, 'p90'), h('th', {class: 'n'}, 'Max'))), ht)),
    h('div', {}, h('h2', {}, 'Exemplars ', h('span', {class: 'muted'}, '— the snapshots of this version where it is biggest')), h('table', {id: 'exemplars'}, h('thead', {}, h('tr', {}, h('th', {}, 'Snapshot'), h('th', {}, 'Device'), h('th', {}, 'Version'), h('th', {class: 'n'}, 'Bytes'), h('th', {}, ''))), et))));
}

// ---- version comparison
function drawTree(el, root) {
  const W = el.clientWidth, ROW = 28, total = Math.max(1, root.value);
  let depth = 0;
  (function lay(n, x, w, d) {
    depth = Math.max(depth, d);
    const raw = d === 0 ? '(roots)' : n.name, name = pretty(raw);
    el.append(h('div', {class: 'ic', 'data-name': raw, 'data-depth': d, title: name + '\n' + n.value.toLocaleString('en-US') + ' B over ' + n.snapshots + ' snapshots (mean ' + Number(n.mean).toLocaleString('en-US') + ' B)',
      style: `left:${x}px;top:${d * ROW}px;width:${Math.max(1, w - 1)}px;background:${d ? colorOf(name) : '#d0d7e2'}`}, w > 50 ? name : ''));
    let cx = x;
    for (const c of n.children || []) {
      const cw = w * c.value / Math.max(1, n.value);
      if (cw >= 2 && d < 10) lay(c, cx, cw, d + 1);
      cx += cw;
    }
  })(root, 0, W * root.value / total, 0);
  el.style.height = ((depth + 1) * ROW + 2) + 'px';
}
async function vCompare(box, r) {
  const app = r.args[0];
  const {vs, version, baseline} = await versionsOf(app, r.q);
  appTabs(app, 'compare', version, baseline);
  box.append(h('h1', {}, h('span', {class: 'cls'}, app), ' · compare versions'));
  if (!vs.length) { box.append(h('p', {class: 'muted'}, 'No analysed snapshots yet.')); return; }
  const t = versionTools(app, vs, version, baseline, null, 'compare');
  box.append(h('div', {class: 'tools'}, t.tools));
  const [g, tree] = await Promise.all([get(appPath(app, 'growth'), {version, baseline, n: 30}), get(appPath(app, 'tree'), {version})]);
  box.append(h('p', {class: 'sub'}, 'Median bytes per snapshot of each class, ', h('b', {}, version), baseline ? [' against ', h('b', {}, baseline)] : '', ', biggest risers first.'));
  const max = Math.max(1, ...g.classes.map((c) => Math.abs(c.delta)));
  const tb = h('tbody');
  for (const c of g.classes)
    tb.append(h('tr', {'data-class': c.class}, h('td', {}, h('span', {class: 'cls', title: c.class}, pretty(c.class))), h('td', {class: 'n'}, bytes(c.baseline_median)), h('td', {class: 'n'}, bytes(c.median)),
      h('td', {class: 'n', 'data-f': 'delta'}, signed(c.delta, bytes)), h('td', {class: 'n muted'}, count(c.snapshots)), h('td', {class: 'barcell'}, bar(Math.max(0, c.delta), max))));
  box.append(h('h2', {}, 'Class growth'), h('table', {id: 'growth'}, h('thead', {}, h('tr', {}, h('th', {}, 'Class'), h('th', {class: 'n'}, baseline || 'baseline'), h('th', {class: 'n'}, version), h('th', {class: 'n'}, 'Δ median'), h('th', {class: 'n'}, 'Snapshots'), h('th', {}, ''))), tb));
  const ic = h('div', {class: 'icicle', id: 'tree'});
  box.append(h('h2', {}, 'Merged retention of ', version, ' ', h('span', {class: 'muted'}, '— the retaining paths of its ', count(tree.snapshots), ' snapshots as one tree; width = bytes summed over them')), ic);
  afterAttach.push(() => drawTree(ic, tree.tree));
}

let afterAttach = [];
async function render() {
  const r = route();
  const pages = {apps: vApps, issues: vIssues, issue: vIssue, compare: vCompare, login: vLogin};
  const fn = pages[r.page] || vApps;
  const box = h('div', {'data-page': r.page});
  afterAttach = [];
  if (r.page === 'apps' || r.page === 'login') $('tabs').replaceChildren(h('a', {href: '#/apps', class: 'on'}, 'Apps'));
  try {
    await fn(box, r);
  } catch (e) {
    if (e instanceof Unauthorized) { box.replaceChildren(); box.setAttribute('data-page', 'login'); vLogin(box); }
    else box.append(h('p', {class: 'err'}, String(e.message || e)));
  }
  main.replaceChildren(box);
  for (const f of afterAttach) f();
  document.title = 'heapgraph serve — ' + (box.querySelector('h1') ? box.querySelector('h1').textContent : r.page);
  main.setAttribute('data-ready', location.hash || '#/apps');
}
window.addEventListener('hashchange', render);
render();
