// viewer/app.js — the heapgraph viewer's page logic: hash routes (so the
// browser's back button works), one render function per view, all data from
// the server's JSON API one page at a time. Every string from the snapshot
// reaches the page as a text node (never as HTML).
'use strict';

const main = $('main');

// ---- API
async function api(name, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const r = await fetch('api/' + name + (q.toString() ? '?' + q : ''), {credentials: 'same-origin'});
  const body = await r.json().catch(() => ({error: 'bad answer (' + r.status + ')'}));
  if (!r.ok) throw new Error(body.error || ('HTTP ' + r.status));
  return body;
}

// ---- routing: #/view/arg?k=v
function route() {
  const raw = location.hash.replace(/^#\/?/, '') || 'summary';
  const [path, qs] = raw.split('?');
  const parts = path.split('/').map(decodeURIComponent);
  return {view: parts[0], arg: parts.slice(1).join('/'), q: new URLSearchParams(qs || '')};
}
function go(view, arg, q) {
  const qs = q ? new URLSearchParams(Object.entries(q).filter(([, v]) => v !== undefined && v !== '' && v !== null)).toString() : '';
  location.hash = '#/' + view + (arg !== undefined && arg !== null && arg !== '' ? '/' + encodeURIComponent(arg) : '') + (qs ? '?' + qs : '');
}

let summary = null;
let selectable = null; // {rows: [...tr], index, open(i)} for j/k/Enter

function setSelectable(rows, open) {
  selectable = {rows, index: -1, open};
}
function select(i) {
  if (!selectable || !selectable.rows.length) return;
  i = Math.max(0, Math.min(selectable.rows.length - 1, i));
  if (selectable.index >= 0 && selectable.rows[selectable.index]) selectable.rows[selectable.index].classList.remove('sel');
  selectable.index = i;
  const r = selectable.rows[i];
  r.classList.add('sel');
  r.scrollIntoView({block: 'nearest'});
}

function pager(total, offset, n, move) {
  const end = Math.min(total, offset + n);
  return h('div', {class: 'pager'},
    h('button', {disabled: offset <= 0, 'data-page': 'prev', on: {click: () => move(Math.max(0, offset - n))}}, '‹ Prev'),
    h('span', {}, total ? (offset + 1).toLocaleString('en-US') + '–' + end.toLocaleString('en-US') + ' of ' + Number(total).toLocaleString('en-US') : 'none'),
    h('button', {disabled: end >= total, 'data-page': 'next', on: {click: () => move(offset + n)}}, 'Next ›'));
}
let pageMove = null; // [prev, next] for the [ and ] keys
let afterAttach = []; // run once the view is in the document

async function render() {
  const r = route();
  for (const a of document.querySelectorAll('#tabs a')) a.classList.toggle('on', a.dataset.tab === r.view || (a.dataset.tab === 'classes' && r.view === 'class') || (a.dataset.tab === 'stacks' && r.view === 'stack'));
  selectable = null;
  pageMove = null;
  const views = {summary: vSummary, classes: vClasses, class: vClass, dominators: vDominators, stacks: vStacks, stack: vStack, object: vObject, leaks: vLeaks, cycles: vCycles, diff: vDiff};
  const fn = views[r.view] || vSummary;
  const box = h('div', {'data-view': r.view});
  afterAttach = [];
  try {
    await fn(box, r);
  } catch (e) {
    box.append(h('p', {class: 'err'}, String(e.message || e)));
  }
  main.replaceChildren(box);
  for (const f of afterAttach) f(); // charts need the laid-out size
  document.title = 'heapgraph — ' + (box.querySelector('h1') ? box.querySelector('h1').textContent : r.view);
  main.setAttribute('data-ready', location.hash);
}

// ---- Summary
const KIND_ORDER = ['heap', 'stack', 'image', 'anonymous', 'file', 'other'];
function regionKind(name) {
  // a file path is an image or a file, whatever its name says (libheapgraph.so, …/stacks/…)
  const path = name.startsWith('/');
  if (!path && (name === '[heap]' || /malloc|heap|MALLOC/.test(name))) return 'heap';
  if (!path && (name.startsWith('[stack') || /stack/i.test(name))) return 'stack';
  if (name === '(anonymous)' || name.startsWith('[anon')) return 'anonymous';
  if (/\.so(\.|$)|\/lib|\/bin\/|\.dylib|\.framework/.test(name)) return 'image';
  if (name.startsWith('/')) return 'file';
  return 'other';
}
// Squarified treemap (Bruls, Huizing, van Wijk) of items {value} into a w×h box.
function squarify(items, x, y, w, hgt) {
  const out = [];
  const total = items.reduce((s, i) => s + i.value, 0);
  if (!total) return out;
  const scale = (w * hgt) / total;
  let rest = items.map((i) => ({...i, area: i.value * scale}));
  while (rest.length) {
    const side = Math.min(w, hgt);
    let row = [rest[0]], best = worst(row, side), k = 1;
    while (k < rest.length) {
      const next = worst(row.concat(rest[k]), side);
      if (next > best) break;
      row.push(rest[k]); best = next; k++;
    }
    const sum = row.reduce((s, i) => s + i.area, 0);
    if (w >= hgt) {
      const cw = sum / hgt; let cy = y;
      for (const i of row) { const ch = i.area / cw; out.push({...i, x, y: cy, w: cw, h: ch}); cy += ch; }
      x += cw; w -= cw;
    } else {
      const chh = sum / w; let cx = x;
      for (const i of row) { const cw = i.area / chh; out.push({...i, x: cx, y, w: cw, h: chh}); cx += cw; }
      y += chh; hgt -= chh;
    }
    rest = rest.slice(k);
  }
  return out;
  function worst(row, side) {
    const s = row.reduce((a, i) => a + i.area, 0), mx = Math.max(...row.map((i) => i.area)), mn = Math.min(...row.map((i) => i.area));
    return Math.max((side * side * mx) / (s * s), (s * s) / (side * side * mn));
  }
}

async function vSummary(box) {
  const [info, regions, s, top] = await Promise.all([api('info'), api('regions'), api('summary'), api('top', {n: 8})]);
  const title = (info.process || '(unknown process)') + (info.pid ? ' · pid ' + info.pid : '');
  box.append(h('h1', {}, title),
    h('p', {class: 'sub'}, [info.platform, info.os_version, info.arch].filter(Boolean).join(' · '),
      info.time_ns ? ' · captured ' + new Date(Number(info.time_ns) / 1e6).toLocaleString() : '',
      info.trigger ? ' · trigger: ' + info.trigger : ''));
  const card = (k, v, d, cls) => h('div', {class: 'card ' + (cls || ''), 'data-card': k}, h('div', {class: 'k'}, k), h('div', {class: 'v'}, v), h('div', {class: 'd'}, d || ''));
  box.append(h('div', {class: 'cards'},
    card('Heap blocks', count(s.nodes_total), bytes(s.bytes_total)),
    card('Reachable', bytes(s.reachable_bytes), [count(s.reachable_count), ' blocks · ', pct(s.reachable_bytes, s.bytes_total)]),
    card('Leaked', bytes(s.leaked_bytes), [count(s.leaked_count), pl(s.leaked_count, ' block'), ' in ', count(s.root_leaks), pl(s.root_leaks, ' root leak')], s.leaked_count ? 'warn' : ''),
    card('Classes', count(s.class_count), [count(s.cycle_count), pl(s.cycle_count, ' reference cycle')]),
    card('References', count(s.edges_total), [count(info.counts.roots), pl(info.counts.roots, ' root')]),
    card('Regions', count(info.counts.regions), [count(info.counts.images), pl(info.counts.images, ' image'), ' · ', count(info.counts.threads), pl(info.counts.threads, ' thread')]),
    s.stacks ? card('Allocation stacks', h('a', {href: '#/stacks'}, count(s.stacks.listed)), [s.stacks.sample_bytes ? 'sampled' : 'every block', ' · ', count(s.stacks.unattributed_nodes), ' without a stack']) : ''));

  box.append(fillsMemory(top));

  const treeBox = h('div', {class: 'treemap', id: 'treemap'});
  const groups = regions.filter((g) => !g.total);
  let metric = groups.some((g) => g.resident > 0) ? 'resident' : 'virtual'; // what filled memory
  const seg = h('span', {class: 'seg'});
  for (const m of ['virtual', 'resident', 'dirty'])
    seg.append(h('button', {'data-metric': m, class: m === metric ? 'on' : '', on: {click: (e) => {
      metric = m;
      for (const b of seg.children) b.classList.toggle('on', b === e.currentTarget);
      treeBox.replaceChildren();
      drawTreemap(treeBox, groups, metric);
    }}}, m));
  box.append(h('h2', {class: 'withtools'}, h('span', {}, 'Memory regions by kind ', h('span', {class: 'muted'}, '— area is the chosen size; hover a region for all three')), seg), treeBox);
  const legend = h('div', {class: 'legend'});
  const byKind = {};
  for (const g of groups) { const k = regionKind(g.name); (byKind[k] = byKind[k] || {kind: k, virtual: 0, resident: 0, dirty: 0, count: 0}); byKind[k].virtual += g.virtual; byKind[k].resident += g.resident; byKind[k].dirty += g.dirty; byKind[k].count += g.count; }
  for (const k of KIND_ORDER) if (byKind[k]) legend.append(h('span', {'data-kind': k}, h('i', {class: 'k-' + k}), h('b', {}, k), ' ', bytes(byKind[k].virtual), ' virtual, ', bytes(byKind[k].resident), ' resident', h('span', {class: 'muted'}, ' · ' + byKind[k].count + pl(byKind[k].count, ' region'))));
  box.append(legend);
  afterAttach.push(() => drawTreemap(treeBox, groups, metric));

  const meta = h('dl', {class: 'kv'});
  const row = (k, v) => { if (v !== null && v !== undefined && v !== '') meta.append(h('dt', {}, k), h('dd', {}, v)); };
  row('File', info.file); row('File size', bytes(info.file_size)); row('Format', 'v' + info.format_version + ' · checksum ' + (info.checksum_ok ? 'ok' : 'BAD'));
  row('Allocator', info.allocator); row('Heap status', info.heap_status); row('Pointer / page', info.pointer_size + ' B / ' + info.page_size + ' B');
  for (const [k, v] of Object.entries(info.app || {})) row('app.' + k, v);
  const cap = h('dl', {class: 'kv'});
  for (const [k, v] of Object.entries(info.capture || {})) cap.append(h('dt', {}, k), h('dd', {}, /_ns$/.test(k) ? h('span', {class: 'num', title: v + ' ns'}, duration(v)) : /bytes/.test(k) ? bytes(v) : count(v)));
  if (!cap.children.length) cap.append(h('dd', {class: 'muted'}, 'no capture statistics in this snapshot'));
  box.append(h('div', {class: 'cols'}, h('div', {}, h('h2', {}, 'Snapshot'), meta), h('div', {}, h('h2', {}, 'Capture'), cap)));
  const t = h('table', {id: 'regions'}, h('thead', {}, h('tr', {}, h('th', {}, 'Region'), h('th', {}, 'Kind'), h('th', {class: 'n'}, 'Count'), h('th', {class: 'n'}, 'Virtual'), h('th', {class: 'n'}, 'Resident'), h('th', {class: 'n'}, 'Dirty'), h('th', {class: 'n'}, 'Swapped'))));
  const tb = h('tbody');
  for (const g of regions.slice(0, 40)) tb.append(h('tr', {}, h('td', {class: g.total ? 'cls' : ''}, g.name), h('td', {}, g.total ? '' : regionKind(g.name)), h('td', {class: 'n'}, count(g.count)), h('td', {class: 'n'}, bytes(g.virtual)), h('td', {class: 'n'}, bytes(g.resident)), h('td', {class: 'n'}, bytes(g.dirty)), h('td', {class: 'n'}, bytes(g.swapped))));
  t.append(tb);
  box.append(h('h2', {}, 'Regions, most dirty first', regions.length > 41 ? h('span', {class: 'muted'}, ' (40 of ' + (regions.length - 1) + ')') : ''), t);
}
// What fills memory first: the classes and the blocks retaining the most
// (the answer of `heapgraph top`), each a link to its view.
function fillsMemory(top) {
  const classTable = h('table', {id: 'top-classes'}, h('thead', {}, h('tr', {}, h('th', {}, 'Class'), h('th', {class: 'n'}, 'Count'), h('th', {class: 'n'}, 'Retained'), h('th', {}, ''))));
  const cb = h('tbody');
  const cmax = Math.max(1, ...top.classes.map((c) => c.retained));
  for (const c of top.classes)
    cb.append(h('tr', {class: 'click', 'data-class': label(c.class), on: {click: () => openClassByName(c.class)}},
      h('td', {}, h('span', {class: 'cls'}, label(c.class))), h('td', {class: 'n', 'data-f': 'count'}, count(c.count)),
      h('td', {class: 'n', 'data-f': 'retained'}, bytes(c.retained)), h('td', {class: 'barcell'}, bar(c.retained, cmax))));
  classTable.append(cb);
  const nodeTable = h('table', {id: 'top-retainers'}, h('thead', {}, h('tr', {}, h('th', {}, 'Block'), h('th', {class: 'n'}, 'Retained'), h('th', {}, ''))));
  const nb = h('tbody');
  const nmax = Math.max(1, ...top.nodes.map((n) => n.retained));
  for (const n of top.nodes)
    nb.append(h('tr', {class: 'click', 'data-addr': n.addr, on: {click: (e) => { if (e.target.tagName !== 'A') go('object', n.addr); }}},
      h('td', {}, nodeRef(n)), h('td', {class: 'n', 'data-f': 'retained'}, bytes(n.retained)), h('td', {class: 'barcell'}, bar(n.retained, nmax))));
  nodeTable.append(nb);
  const none = (t) => h('p', {class: 'muted'}, t);
  return h('div', {class: 'cols', id: 'fills'},
    h('div', {}, h('h2', {}, 'What fills memory: classes ', h('span', {class: 'muted'}, '— by retained bytes · ', h('a', {href: '#/classes'}, 'all'))), top.classes.length ? classTable : none('No reachable blocks.')),
    h('div', {}, h('h2', {}, 'Biggest retainers ', h('span', {class: 'muted'}, '— blocks · ', h('a', {href: '#/dominators'}, 'dominator tree'))), top.nodes.length ? nodeTable : none('No reachable blocks.')));
}

function drawTreemap(el, groups, metric) {
  const W = el.clientWidth, H = el.clientHeight;
  const items = groups.filter((g) => g[metric] > 0).sort((a, b) => b[metric] - a[metric]).slice(0, 60).map((g) => ({value: g[metric], g}));
  if (!items.length) el.append(h('p', {class: 'muted', style: 'padding:12px 16px'}, 'No ' + metric + ' bytes recorded for these regions.'));
  for (const r of squarify(items, 0, 0, W, H)) {
    const k = regionKind(r.g.name);
    const tip = r.g.name + '\nvirtual ' + r.g.virtual.toLocaleString('en-US') + ' B\nresident ' + r.g.resident.toLocaleString('en-US') + ' B\ndirty ' + r.g.dirty.toLocaleString('en-US') + ' B\n' + r.g.count + ' regions';
    const cell = h('div', {class: 'tm k-' + k, title: tip, style: `left:${r.x}px;top:${r.y}px;width:${r.w}px;height:${r.h}px`});
    if (r.w > 60 && r.h > 30) cell.append(h('b', {}, r.g.name.split('/').pop() || r.g.name), bytes(r.g[metric]));
    el.append(cell);
  }
}

// ---- Classes
async function vClasses(box, r) {
  const sort = r.q.get('sort') || 'retained', q = r.q.get('q') || '', offset = Number(r.q.get('offset') || 0), n = 100;
  const asc = r.q.get('asc') === '1';
  const d = await api('classes', {sort, q, offset, n, asc: asc ? 1 : 0});
  box.append(h('h1', {}, 'Classes'), h('p', {class: 'sub'}, 'Instances, their own bytes, and the bytes they retain (freed if every instance went away). Click a class for its instances.'));
  const input = h('input', {type: 'search', id: 'class-filter', placeholder: 'Filter classes…', value: q, spellcheck: 'false'});
  let timer;
  input.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(() => go('classes', '', {sort, q: input.value, asc: asc ? 1 : ''}), 250); });
  box.append(h('div', {class: 'tools'}, input, h('span', {class: 'muted'}, count(d.total), ' classes')));
  const th = (key, text) => h('th', {class: 'sort n' + (sort === key ? ' on' : ''), 'data-sort': key, on: {click: () => go('classes', '', {sort: key, q, asc: sort === key && !asc ? 1 : ''})}}, text, sort === key ? (asc ? ' ▲' : ' ▼') : '');
  const max = Math.max(1, ...d.rows.map((x) => x.retained));
  const tb = h('tbody');
  const rows = [];
  for (const c of d.rows) {
    const tr = h('tr', {class: 'click', 'data-class-id': c.id, 'data-class': label(c.class), on: {click: () => go('class', c.id)}},
      h('td', {}, h('a', {href: '#/class/' + c.id, class: 'cls'}, label(c.class)), c.kind ? h('span', {class: 'kindpill'}, c.kind) : ''),
      h('td', {class: 'n', 'data-f': 'count'}, count(c.count)),
      h('td', {class: 'n', 'data-f': 'bytes'}, bytes(c.bytes)),
      h('td', {class: 'n', 'data-f': 'retained'}, bytes(c.retained)),
      h('td', {class: 'barcell'}, bar(c.retained, max)));
    rows.push(tr); tb.append(tr);
  }
  const nameTh = h('th', {class: 'sort' + (sort === 'name' ? ' on' : ''), 'data-sort': 'name', on: {click: () => go('classes', '', {sort: 'name', q, asc: ''})}}, 'Class');
  box.append(h('table', {id: 'classes'}, h('thead', {}, h('tr', {}, nameTh, th('count', 'Count'), th('bytes', 'Self'), th('retained', 'Retained'), h('th', {}, ''))), tb));
  const move = (o) => go('classes', '', {sort, q, asc: asc ? 1 : '', offset: o});
  box.append(pager(d.total, offset, n, move));
  pageMove = [() => offset > 0 && move(Math.max(0, offset - n)), () => offset + n < d.total && move(offset + n)];
  setSelectable(rows, (i) => go('class', d.rows[i].id));
}

async function vClass(box, r) {
  const id = r.arg, offset = Number(r.q.get('offset') || 0), n = 100;
  const d = await api('instances', {class: id, offset, n});
  box.append(h('h1', {}, h('span', {class: 'cls', id: 'class-name'}, label(d.class))),
    h('p', {class: 'sub'}, count(d.total), ' instances, biggest retained first · ', h('a', {href: '#/classes'}, 'all classes')));
  const tb = h('tbody'), rows = [];
  const max = Math.max(1, ...d.rows.map((x) => x.retained));
  for (const x of d.rows) {
    const tr = h('tr', {class: 'click', 'data-addr': x.addr, on: {click: (e) => { if (e.target.tagName !== 'A') go('object', x.addr); }}},
      h('td', {}, nodeLink(x)), h('td', {class: 'n', 'data-f': 'size'}, bytes(x.size)), h('td', {class: 'n', 'data-f': 'retained'}, x.retained ? bytes(x.retained) : h('span', {class: 'badge warn'}, 'unreachable')), h('td', {class: 'barcell'}, bar(x.retained, max)));
    rows.push(tr); tb.append(tr);
  }
  box.append(h('table', {id: 'instances'}, h('thead', {}, h('tr', {}, h('th', {}, 'Address'), h('th', {class: 'n'}, 'Size'), h('th', {class: 'n'}, 'Retained'), h('th', {}, ''))), tb));
  const move = (o) => go('class', id, {offset: o});
  box.append(pager(d.total, offset, n, move));
  pageMove = [() => offset > 0 && move(Math.max(0, offset - n)), () => offset + n < d.total && move(offset + n)];
  setSelectable(rows, (i) => go('object', d.rows[i].addr));
}

// ---- Dominator tree + icicle

async function vDominators(box, r) {
  const focus = r.q.get('focus') || '';
  const [s, ice] = await Promise.all([api('summary'), api('icicle', {node: focus || undefined, depth: 5, n: 14})]);
  box.append(h('h1', {}, 'Dominator tree'),
    h('p', {class: 'sub'}, 'Each block hangs under the block that must go for it to be freed; retained = its own bytes plus everything below it. ',
      focus ? h('a', {href: '#/dominators'}, '↑ back to the roots') : ['Reachable: ', bytes(s.reachable_bytes), ' in ', count(s.reachable_count), ' blocks.']));
  const ic = h('div', {class: 'icicle', id: 'icicle'});
  box.append(ic);
  afterAttach.push(() => drawIcicle(ic, ice));
  const tb = h('tbody');
  box.append(h('h2', {}, 'Biggest retainers first ', h('span', {class: 'muted'}, '— ', h('kbd', {}, '→'), ' expands, ', h('kbd', {}, '←'), ' collapses')),
    h('table', {class: 'tree', id: 'domtree'}, h('thead', {}, h('tr', {}, h('th', {}, 'Block'), h('th', {class: 'n'}, 'Self'), h('th', {class: 'n'}, 'Retained'), h('th', {class: 'n'}, '% of parent'), h('th', {}, ''))), tb));
  const rows = [];
  const refresh = () => { rows.length = 0; rows.push(...tb.querySelectorAll('tr[data-addr]')); };
  const total = ice.retained;
  async function addChildren(parentRow, node, depth, offset) {
    const d = await api('children', {node: node === null ? undefined : '#' + node, offset, n: 50});
    let after = parentRow;
    const insert = (tr) => { if (after) after.after(tr); else tb.append(tr); after = tr; };
    for (const x of d.rows) {
      const tw = h('span', {class: 'tw'}, x.children ? '▸' : '·');
      const tr = h('tr', {'data-addr': x.addr, 'data-depth': depth, 'data-index': x.index},
        h('td', {style: 'padding-left:' + (12 + depth * 18) + 'px'}, tw, nodeRef(x), x.children ? h('span', {class: 'muted'}, ' · ' + x.children.toLocaleString('en-US') + ' below') : ''),
        h('td', {class: 'n'}, bytes(x.size)), h('td', {class: 'n', 'data-f': 'retained'}, bytes(x.retained)), h('td', {class: 'n muted'}, pct(x.retained, d.retained)),
        h('td', {class: 'barcell'}, bar(x.retained, total)));
      tr.toggle = async (want) => {
        if (!x.children) return;
        const open = tr.dataset.open === '1';
        if (want === open) return;
        if (open) { let nx = tr.nextElementSibling; while (nx && Number(nx.dataset.depth) > depth) { const t = nx.nextElementSibling; nx.remove(); nx = t; } tr.dataset.open = '0'; tw.textContent = '▸'; }
        else { tr.dataset.open = '1'; tw.textContent = '▾'; await addChildren(tr, x.index, depth + 1, 0); }
        refresh();
      };
      tw.addEventListener('click', () => tr.toggle(tr.dataset.open !== '1'));
      insert(tr);
    }
    if (d.total > offset + d.rows.length) {
      const more = h('tr', {'data-depth': depth}, h('td', {colspan: 5, style: 'padding-left:' + (30 + depth * 18) + 'px'},
        h('button', {on: {click: async () => { more.remove(); await addChildren(after === more ? null : after, node, depth, offset + d.rows.length); refresh(); }}}, 'Show ' + Math.min(50, d.total - offset - d.rows.length) + ' more of ' + (d.total - offset - d.rows.length).toLocaleString('en-US'))));
      insert(more);
    }
  }
  await addChildren(null, focus ? Number(ice.index) : null, 0, 0);
  refresh();
  selectable = {rows, index: -1, open: (i) => go('object', rows[i].dataset.addr), tree: true};
}
function drawIcicle(el, root) {
  const W = el.clientWidth, RH = 28, levels = [];
  (function lay(n, x, w, d) {
    (levels[d] = levels[d] || []).push({n, x, w});
    let cx = x;
    for (const c of n.children || []) { const cw = root.retained ? (w * c.retained) / n.retained : 0; if (cw >= 1) lay(c, cx, cw, d + 1); cx += cw; }
  })(root, 0, W, 0);
  el.style.height = levels.length * RH + 4 + 'px';
  levels.forEach((lv, d) => lv.forEach(({n, x, w}) => {
    const name = n.index === null ? 'all roots' : label(n.class);
    const cell = h('div', {class: 'ic', 'data-index': n.index, style: `left:${x}px;top:${2 + d * RH}px;width:${Math.max(1, w - 1)}px;background:${n.index === null ? '#c9d3e3' : colorOf(name)}`,
      title: (n.index === null ? 'all roots' : n.addr + ' ' + name) + '\nretained ' + Number(n.retained).toLocaleString('en-US') + ' B',
      on: {click: () => (n.index === null ? go('dominators') : d === 0 ? go('object', n.addr) : go('dominators', '', {focus: '#' + n.index}))}});
    if (w > 70) cell.append(name + ' ', bytes(n.retained));
    el.append(cell);
  }));
}

// ---- Object
async function vObject(box, r) {
  const node = r.arg;
  const [show, dom, paths] = await Promise.all([api('show', {node, n: 100}), api('dominators', {node, n: 50}), api('path', {node, n: 5})]);
  const x = show.node;
  box.append(h('h1', {}, h('span', {class: 'cls', id: 'obj-class'}, label(x.class)), ' ', h('span', {class: 'addr muted', id: 'obj-addr'}, x.addr)));
  const card = (k, v) => h('div', {class: 'card', 'data-card': k}, h('div', {class: 'k'}, k), h('div', {class: 'v'}, v));
  box.append(h('div', {class: 'cards'}, card('Size', bytes(x.size)), card('Retained', dom.reachable ? bytes(dom.node.retained) : h('span', {class: 'pos'}, 'leaked')),
    card('Outgoing', count(show.out_count)), card('Incoming', count(show.in_count))));
  const flags = [];
  if (show.node.flags & 1) flags.push('malloc'); if (show.node.flags & 2) flags.push('region'); if (show.node.flags & 4) flags.push('mmapped');
  const kv = h('dl', {class: 'kv'});
  const row = (k, v) => { if (v !== null && v !== undefined && v !== '') kv.append(h('dt', {}, k), h('dd', {}, v)); };
  row('Class kind', show.node.class_kind); row('Index', '#' + x.index); row('Region', show.node.region); row('Heap', show.node.heap); row('Flags', flags.join(', '));
  for (const rt of show.roots) row('Root', rt.kind + ' at ' + rt.addr);
  const st = show.node.stack;
  box.append(h('div', {class: 'cols objinfo'}, kv, h('div', {id: 'obj-stack'}, h('h2', {class: 'first'}, st ? ['Allocated at ', h('a', {href: '#/stack/' + st.id, id: 'obj-stack-link'}, 'stack #' + st.id)] : 'Allocation stack'),
    st ? frameList(st.frames, 'obj-frames') : h('p', {class: 'muted', id: 'obj-no-stack'}, notRecorded()))));

  const chain = h('ul', {class: 'chain', id: 'chain'});
  if (!dom.reachable) chain.append(h('li', {class: 'pos'}, 'No root reaches this block: it is leaked. ', h('a', {href: '#/leaks'}, 'See leaks')));
  else {
    chain.append(h('li', {class: 'muted'}, '(roots)'));
    for (const c of dom.chain.slice().reverse()) chain.append(h('li', {}, '↳ ', nodeRef(c), ' retains ', bytes(c.retained)));
    chain.append(h('li', {}, '↳ ', h('b', {}, 'this block'), ' retains ', bytes(dom.node.retained)));
  }
  const pbox = h('div', {id: 'paths'});
  if (!paths.reachable) pbox.append(h('p', {class: 'muted'}, 'No retaining path from a root (weak references do not count).'));
  paths.paths.forEach((p) => {
    const el = h('div', {class: 'path'}, h('div', {class: 'muted'}, 'root ', h('b', {}, p.root ? p.root.kind : '?'), p.root ? ' at ' + p.root.addr : '', ' · ' + p.length + ' reference' + (p.length === 1 ? '' : 's')));
    p.steps.forEach((s, j) => el.append(h('div', {class: 'step', style: 'padding-left:' + Math.min(j, 12) * 14 + 'px'},
      j ? h('span', {class: 'via'}, '→ ', s.via || '+0x' + s.offset.toString(16), ' [' + s.kind + '] ') : '', nodeRef(s))));
    pbox.append(el);
  });
  box.append(h('div', {class: 'cols'}, h('div', {}, h('h2', {}, 'Dominator chain'), chain), h('div', {}, h('h2', {}, 'Shortest retaining paths from roots'), pbox)));

  const refs = (list, total, title, id) => {
    const tb = h('tbody');
    if (!list.length) tb.append(h('tr', {}, h('td', {colspan: 4, class: 'muted'}, 'none')));
    for (const e of list) tb.append(h('tr', {}, h('td', {}, nodeRef(e)), h('td', {}, e.field ? h('b', {}, e.field) : h('span', {class: 'muted'}, '—')), h('td', {class: 'n addr'}, '+0x' + e.offset.toString(16)), h('td', {}, e.kind)));
    return h('div', {}, h('h2', {}, title + ' ', h('span', {class: 'muted'}, '(', count(total), total > list.length ? ', first ' + list.length : '', ')')),
      h('table', {id}, h('thead', {}, h('tr', {}, h('th', {}, 'Block'), h('th', {}, 'Field'), h('th', {class: 'n'}, 'Offset'), h('th', {}, 'Kind'))), tb));
  };
  box.append(h('div', {class: 'cols'}, refs(show.out, show.out_count, 'References out', 'out'), refs(show.in, show.in_count, 'Referenced from', 'in')));
  if (dom.dominated_count) {
    const tb = h('tbody');
    for (const c of dom.dominated) tb.append(h('tr', {}, h('td', {}, nodeRef(c)), h('td', {class: 'n'}, bytes(c.retained))));
    box.append(h('h2', {}, 'Dominates directly ', h('span', {class: 'muted'}, '(', count(dom.dominated_count), ') · ', h('a', {href: '#/dominators?focus=' + encodeURIComponent('#' + x.index)}, 'open in the tree'))),
      h('table', {id: 'dominated'}, h('thead', {}, h('tr', {}, h('th', {}, 'Block'), h('th', {class: 'n'}, 'Retained'))), tb));
  }
}

// ---- Allocation stacks
// A frame as `heapgraph stacks` prints it: function (file:line) with debug
// info, else function (image), else image+offset, else the absolute address.
const baseName = (p) => (p ? p.split('/').pop() : '');
function frameItem(f) {
  const fn = f.function ? f.function : f.image ? baseName(f.image) + '+' + f.offset : f.offset;
  const where = f.function && f.file ? f.file + ':' + f.line : f.function && f.image ? baseName(f.image) + ' +' + f.offset : '';
  return h('li', {class: 'frame', 'data-function': f.function || ''}, h('span', {class: 'fn'}, fn), where ? h('span', {class: 'where', title: f.image || ''}, where) : '');
}
function frameList(frames, id) {
  if (!frames.length) return h('p', {class: 'muted'}, 'no frames recorded');
  return h('ol', {class: 'frames', start: 0, id}, frames.map(frameItem));
}
// "site_a ← a_mid ← a_outer": the innermost functions, the allocating one first
function stackLabel(frames, k) {
  const names = frames.slice(0, k || 3).map((f) => f.function || (f.image ? baseName(f.image) + '+' + f.offset : f.offset));
  return names.join(' ← ') + (frames.length > (k || 3) ? ' ← …' : '');
}
function noStacks() {
  return h('p', {class: 'sub', id: 'no-stacks'}, 'This snapshot has no allocation stacks: they were not recorded when it was captured. Capture with ',
    h('code', {}, 'heapgraph run --stacks -- PROG'), ' (or HEAPGRAPH_STACKS=1 with the preloaded library, or hg_stacks_start in the app) to see which code allocated each block.');
}
function sampledNote(info) {
  return info.sample_bytes ? h('p', {class: 'note', id: 'sampled'}, 'Sampled: one block per ', bytes(info.sample_bytes), ' allocated was recorded, on average. Count and bytes are estimates of all live blocks; blocks and retained are the sampled blocks in this snapshot.') : '';
}
// What the object view says when the block has no stack.
function notRecorded() {
  const s = summary && summary.stacks;
  if (!s) return 'This snapshot has no allocation stacks (it was captured without heapgraph run --stacks).';
  if (s.sample_bytes) return 'Not recorded: the snapshot was taken in sampled mode (one block per ' + Number(s.sample_bytes).toLocaleString('en-US') + ' bytes allocated, on average) and this block was not sampled.';
  if (s.status !== 'ok') return 'Not recorded: the recorder stopped (' + s.status + ') before this block was allocated.';
  return 'Not recorded: the block was allocated before recording started, or outside the interposed allocator.';
}

async function vStacks(box, r) {
  box.append(h('h1', {}, 'Allocation stacks'));
  if (!summary.stacks) { box.append(noStacks()); return; }
  const mode = ['bottom-up', 'top-down'].includes(r.q.get('mode')) ? r.q.get('mode') : 'table';
  const by = ['count', 'bytes'].includes(r.q.get('by')) ? r.q.get('by') : 'retained';
  const offset = Number(r.q.get('offset') || 0), n = 50;
  const d = await api('stacks', {by, offset, n: mode === 'table' ? n : 0});
  const info = d.info;
  box.append(h('p', {class: 'sub'}, count(d.total), pl(d.total, ' stack'), ' with live blocks (of ', count(info.stacks), ' recorded; unwinder ', info.unwinder || '?', ', ', info.max_frames, ' frames at most). ',
    count(info.unattributed_nodes), pl(info.unattributed_nodes, ' block'), ' without a recorded stack',
    info.status !== 'ok' ? [' · ', h('span', {class: 'badge warn'}, info.status), ' ', count(info.dropped), ' not recorded'] : '', '.'));
  box.append(sampledNote(info));
  const seg = h('span', {class: 'seg', id: 'stack-mode'});
  for (const [m, t] of [['table', 'Stacks'], ['bottom-up', 'Bottom-up tree'], ['top-down', 'Top-down tree']])
    seg.append(h('button', {'data-mode': m, class: m === mode ? 'on' : '', on: {click: () => go('stacks', '', {mode: m === 'table' ? '' : m, by: by === 'retained' ? '' : by})}}, t));
  const sortSeg = h('span', {class: 'seg'});
  if (mode !== 'table')
    for (const k of ['count', 'bytes', 'retained'])
      sortSeg.append(h('button', {'data-by': k, class: k === by ? 'on' : '', on: {click: () => go('stacks', '', {mode, by: k === 'retained' ? '' : k})}}, k));
  box.append(h('div', {class: 'tools'}, seg, mode !== 'table' ? [h('span', {class: 'muted'}, 'biggest first by'), sortSeg] : ''));
  if (mode === 'table') stackTable(box, d, by, offset, n);
  else await stackTree(box, mode, by);
  if (d.large_allocations.length) {
    const tb = h('tbody');
    for (const a of d.large_allocations.slice().reverse())
      tb.append(h('tr', {}, h('td', {}, h('a', {href: '#/object/' + encodeURIComponent(a.addr), class: 'addr'}, a.addr)), h('td', {class: 'n'}, bytes(a.size)), h('td', {class: 'n'}, a.tid),
        h('td', {}, a.stack ? h('a', {href: '#/stack/' + a.stack}, 'stack #' + a.stack) : h('span', {class: 'muted'}, '—'))));
    box.append(h('h2', {}, 'Large allocations ', h('span', {class: 'muted'}, '(the monitor\'s last ' + d.large_allocations.length + ', newest first; the block may be freed since)')),
      h('table', {id: 'large'}, h('thead', {}, h('tr', {}, h('th', {}, 'Address'), h('th', {class: 'n'}, 'Size'), h('th', {class: 'n'}, 'Thread'), h('th', {}, 'Stack'))), tb));
  }
}

function stackTable(box, d, by, offset, n) {
  const th = (key, text) => h('th', {class: 'sort n' + (by === key ? ' on' : ''), 'data-sort': key, on: {click: () => go('stacks', '', {by: key === 'retained' ? '' : key})}}, text, by === key ? ' ▼' : '');
  const max = Math.max(1, ...d.stacks.map((s) => (by === 'count' ? s.count : by === 'bytes' ? s.bytes : s.retained)));
  const tb = h('tbody'), rows = [];
  for (const s of d.stacks) {
    const detail = h('tr', {class: 'detail', hidden: true}, h('td', {colspan: 6}));
    const tr = h('tr', {class: 'click', 'data-stack': s.id, on: {click: (e) => { if (e.target.tagName !== 'A') toggle(); }}},
      h('td', {}, h('span', {class: 'tw'}, '▸'), h('a', {href: '#/stack/' + s.id, class: 'muted'}, '#' + s.id), ' ', h('span', {class: 'fn'}, stackLabel(s.frames))),
      h('td', {class: 'n', 'data-f': 'count'}, count(s.count)), h('td', {class: 'n', 'data-f': 'bytes'}, bytes(s.bytes)),
      h('td', {class: 'n', 'data-f': 'nodes'}, count(s.nodes)), h('td', {class: 'n', 'data-f': 'retained'}, bytes(s.retained)),
      h('td', {class: 'barcell'}, bar(by === 'count' ? s.count : by === 'bytes' ? s.bytes : s.retained, max)));
    async function toggle() {
      const tw = tr.querySelector('.tw');
      if (!detail.hidden) { detail.hidden = true; tw.textContent = '▸'; return; }
      const b = await api('stack', {id: s.id, n: 10});
      detail.firstChild.replaceChildren(h('div', {class: 'cols'},
        h('div', {}, h('h3', {}, 'Frames ', h('span', {class: 'muted'}, '— the allocating function first')), frameList(s.frames)),
        h('div', {}, h('h3', {}, 'Blocks ', h('span', {class: 'muted'}, '— largest first')), blockTable(b.rows, 'stack-blocks-' + s.id),
          b.total > b.rows.length ? h('p', {}, h('a', {href: '#/stack/' + s.id, class: 'all-blocks'}, 'All ' + b.total.toLocaleString('en-US') + ' blocks →')) : '')));
      detail.hidden = false; tw.textContent = '▾';
    }
    tr.toggle = (open) => (open === detail.hidden) && toggle();
    rows.push(tr); tb.append(tr, detail);
  }
  box.append(h('table', {id: 'stacks'}, h('thead', {}, h('tr', {}, h('th', {}, 'Stack'), th('count', 'Count'), th('bytes', 'Bytes'), h('th', {class: 'n', title: 'blocks of the snapshot allocated at this stack'}, 'Blocks'), th('retained', 'Retained'), h('th', {}, ''))), tb));
  const move = (o) => go('stacks', '', {by: by === 'retained' ? '' : by, offset: o});
  box.append(pager(d.total, offset, n, move));
  pageMove = [() => offset > 0 && move(Math.max(0, offset - n)), () => offset + n < d.total && move(offset + n)];
  setSelectable(rows, (i) => go('stack', d.stacks[i].id));
  selectable.tree = true;
}
function blockTable(list, id) {
  const tb = h('tbody');
  if (!list.length) tb.append(h('tr', {}, h('td', {colspan: 3, class: 'muted'}, 'no block of this snapshot')));
  for (const x of list) tb.append(h('tr', {class: 'click', 'data-addr': x.addr, on: {click: (e) => { if (e.target.tagName !== 'A') go('object', x.addr); }}},
    h('td', {}, nodeRef(x)), h('td', {class: 'n', 'data-f': 'size'}, bytes(x.size)), h('td', {class: 'n', 'data-f': 'retained'}, x.retained ? bytes(x.retained) : h('span', {class: 'badge warn'}, 'unreachable'))));
  return h('table', {id, class: 'blocks'}, h('thead', {}, h('tr', {}, h('th', {}, 'Block'), h('th', {class: 'n'}, 'Size'), h('th', {class: 'n'}, 'Retained'))), tb);
}

// Call tree of the stacks, lazily expanded: bottom-up starts from the
// allocating functions, top-down from the outermost frames (as --tree).
async function stackTree(box, order, by) {
  const tb = h('tbody'), rows = [];
  box.append(h('table', {class: 'tree', id: 'stacktree'}, h('thead', {}, h('tr', {}, h('th', {}, 'Frame'), h('th', {class: 'n'}, 'Count'), h('th', {class: 'n'}, 'Bytes'), h('th', {class: 'n'}, 'Retained'), h('th', {}, ''))), tb));
  const refresh = () => { rows.length = 0; rows.push(...tb.querySelectorAll('tr[data-depth]')); };
  let max = 1;
  async function add(parentRow, stack, depth) {
    const d = await api('stacktree', {order, by, stack, depth, n: 200});
    if (!depth) max = Math.max(1, ...d.children.map((c) => c[by]));
    let after = parentRow;
    for (const c of d.children) {
      const f = c.frames[0];
      const tw = h('span', {class: 'tw'}, c.leaf ? '·' : '▸');
      const item = frameItem(f);
      const tr = h('tr', {'data-depth': depth, 'data-function': f.function || ''},
        h('td', {style: 'padding-left:' + (12 + depth * 18) + 'px'}, tw, h('span', {class: 'fn'}, item.firstChild.textContent), item.children[1] ? h('span', {class: 'where'}, item.children[1].textContent) : '',
          c.stacks === 1 ? [' ', h('a', {href: '#/stack/' + c.stack, class: 'muted'}, '#' + c.stack)] : h('span', {class: 'muted'}, ' · ' + c.stacks.toLocaleString('en-US') + ' stacks')),
        h('td', {class: 'n', 'data-f': 'count'}, count(c.count)), h('td', {class: 'n', 'data-f': 'bytes'}, bytes(c.bytes)), h('td', {class: 'n', 'data-f': 'retained'}, bytes(c.retained)),
        h('td', {class: 'barcell'}, bar(c[by], max)));
      tr.toggle = async (want) => {
        if (c.leaf) return;
        const open = tr.dataset.open === '1';
        if (want === open) return;
        if (open) { let nx = tr.nextElementSibling; while (nx && Number(nx.dataset.depth) > depth) { const t = nx.nextElementSibling; nx.remove(); nx = t; } tr.dataset.open = '0'; tw.textContent = '▸'; }
        else { tr.dataset.open = '1'; tw.textContent = '▾'; await add(tr, c.stack, depth + 1); }
        refresh();
      };
      tr.addEventListener('click', (e) => { if (e.target.tagName !== 'A') tr.toggle(tr.dataset.open !== '1'); });
      tr.classList.add('click');
      if (after) after.after(tr); else tb.append(tr);
      after = tr;
    }
    if (d.total > d.children.length) {
      const more = h('tr', {}, h('td', {colspan: 5, class: 'muted', style: 'padding-left:' + (30 + depth * 18) + 'px'}, '… ' + (d.total - d.children.length).toLocaleString('en-US') + ' smaller frames not shown'));
      if (after) after.after(more); else tb.append(more);
    }
  }
  await add(null, 0, 0);
  refresh();
  selectable = {rows, index: -1, open: (i) => rows[i].toggle(rows[i].dataset.open !== '1'), tree: true};
}

async function vStack(box, r) {
  if (!summary.stacks) { box.append(h('h1', {}, 'Allocation stack'), noStacks()); return; }
  const id = r.arg, sort = r.q.get('sort') === 'retained' ? 'retained' : 'size', offset = Number(r.q.get('offset') || 0), n = 100;
  const d = await api('stack', {id, sort, offset, n});
  box.append(h('h1', {}, 'Allocation stack ', h('span', {class: 'muted', id: 'stack-id'}, '#' + d.id)),
    h('p', {class: 'sub'}, d.frames.length ? ['allocated in ', [...frameItem(d.frames[0]).childNodes], ' · '] : '', h('a', {href: '#/stacks'}, 'all stacks')));
  const card = (k, v, t) => h('div', {class: 'card', 'data-card': k, title: t || ''}, h('div', {class: 'k'}, k), h('div', {class: 'v'}, v));
  box.append(h('div', {class: 'cards'}, card('Live blocks', count(d.count), summary.stacks.sample_bytes ? 'estimate (sampled)' : ''), card('Live bytes', bytes(d.bytes)),
    card('In snapshot', count(d.nodes), 'blocks of this snapshot allocated here'), card('Retained', bytes(d.retained))));
  box.append(sampledNote(summary.stacks));
  const th = (key, text) => h('th', {class: 'sort n' + (sort === key ? ' on' : ''), 'data-sort': key, on: {click: () => go('stack', id, {sort: key === 'size' ? '' : key})}}, text, sort === key ? ' ▼' : '');
  const tb = h('tbody'), rows = [];
  for (const x of d.rows) {
    const tr = h('tr', {class: 'click', 'data-addr': x.addr, on: {click: (e) => { if (e.target.tagName !== 'A') go('object', x.addr); }}},
      h('td', {}, nodeRef(x)), h('td', {class: 'n', 'data-f': 'size'}, bytes(x.size)), h('td', {class: 'n', 'data-f': 'retained'}, x.retained ? bytes(x.retained) : h('span', {class: 'badge warn'}, 'unreachable')));
    rows.push(tr); tb.append(tr);
  }
  if (!d.rows.length) tb.append(h('tr', {}, h('td', {colspan: 3, class: 'muted'}, 'no block of this snapshot was allocated here')));
  box.append(h('div', {class: 'cols'},
    h('div', {}, h('h2', {}, 'Frames ', h('span', {class: 'muted'}, '— the allocating function first')), frameList(d.frames, 'stack-frames')),
    h('div', {}, h('h2', {}, 'Blocks ', h('span', {class: 'muted'}, '(', count(d.total), ')')),
      h('table', {id: 'stack-blocks'}, h('thead', {}, h('tr', {}, h('th', {}, 'Block'), th('size', 'Size'), th('retained', 'Retained'))), tb),
      pager(d.total, offset, n, (o) => go('stack', id, {sort: sort === 'size' ? '' : sort, offset: o})))));
  const move = (o) => go('stack', id, {sort: sort === 'size' ? '' : sort, offset: o});
  pageMove = [() => offset > 0 && move(Math.max(0, offset - n)), () => offset + n < d.total && move(offset + n)];
  setSelectable(rows, (i) => go('object', d.rows[i].addr));
}

// ---- Leaks
async function vLeaks(box, r) {
  const offset = Number(r.q.get('offset') || 0), n = 50;
  const d = await api('leaks', {offset, n});
  box.append(h('h1', {}, 'Leaks'), h('p', {class: 'sub'}, d.leaked_count ? [count(d.leaked_count), pl(d.leaked_count, ' block'), ' (', bytes(d.leaked_bytes), ') no root reaches, folded into ', count(d.root_leaks), pl(d.root_leaks, ' root leak'), ': a block or cycle nothing else leaked points to, with everything it holds. Click a row for its group.'] : 'No leaks: every block is reachable from a root.'));
  if (!d.exact) box.append(h('p', {class: 'muted'}, 'Some root leaks share so much that exact sizes were too costly; those show what they alone hold.'));
  const tb = h('tbody'), rows = [];
  for (const x of d.leaks) {
    const detail = h('tr', {class: 'detail', hidden: true}, h('td', {colspan: 5}));
    const tr = h('tr', {class: 'click', 'data-addr': x.addr, on: {click: (e) => { if (e.target.tagName !== 'A') toggle(); }}},
      h('td', {}, nodeRef(x)),
      h('td', {class: 'n'}, x.group_count > 1 ? [h('span', {class: 'badge warn'}, 'cycle of ' + x.group_count), ' ', bytes(x.group_bytes)] : bytes(x.group_bytes)),
      h('td', {class: 'n', 'data-f': 'count'}, count(x.count)), h('td', {class: 'n', 'data-f': 'bytes'}, bytes(x.bytes)), h('td', {class: 'n'}, bytes(x.owned_bytes)));
    async function toggle() {
      if (!detail.hidden) { detail.hidden = true; return; }
      const g = await api('leak', {node: x.addr});
      const cell = detail.firstChild;
      cell.replaceChildren(h('div', {class: 'muted'}, 'Group: ', count(g.count), ' block' + (g.count === 1 ? '' : 's') + ', ', bytes(g.bytes)),
        ...g.members.map((m) => h('div', {class: 'step'}, nodeRef(m))),
        g.references.length ? h('div', {class: 'refs'}, 'references: ', refText(g)) : '');
      detail.hidden = false;
    }
    tr.toggle = (open) => (open === detail.hidden) && toggle();
    rows.push(tr); tb.append(tr, detail);
  }
  box.append(h('table', {id: 'leaks'}, h('thead', {}, h('tr', {}, h('th', {}, 'Root leak'), h('th', {class: 'n'}, 'Group'), h('th', {class: 'n'}, 'Holds blocks'), h('th', {class: 'n'}, 'Holds bytes'), h('th', {class: 'n'}, 'Alone'))), tb));
  const move = (o) => go('leaks', '', {offset: o});
  box.append(pager(d.root_leaks, offset, n, move));
  pageMove = [() => offset > 0 && move(Math.max(0, offset - n)), () => offset + n < d.root_leaks && move(offset + n)];
  setSelectable(rows, (i) => go('object', d.leaks[i].addr));
  selectable.tree = true;
}

// ---- Cycles
// "Class.field → Class [kind]" for the references inside a cycle or leak group.
function refText(c) {
  const byIndex = new Map(c.members.map((m) => [m.index, m]));
  const end = (i) => { const m = byIndex.get(i); return m ? label(m.class) : '#' + i; };
  return c.references.map((e, i) => [i ? ' · ' : '', end(e.from), '.', h('b', {}, e.field), ' → ', end(e.to), ' [' + e.kind + ']']);
}
async function vCycles(box, r) {
  const offset = Number(r.q.get('offset') || 0), n = 20;
  const d = await api('cycles', {offset, n});
  box.append(h('h1', {}, 'Reference cycles'), h('p', {class: 'sub'}, count(d.cycle_count), pl(d.cycle_count, ' group'), ' of blocks that keep each other alive through strong, conservative or interior references (weak ones break cycles), biggest first.'));
  const rows = [];
  d.cycles.forEach((c) => {
    const el = h('div', {class: 'cyc', 'data-count': c.count},
      h('div', {}, h('b', {}, count(c.count), pl(c.count, ' block'), ' · ', bytes(c.bytes)), c.leaked ? h('span', {class: 'badge warn'}, 'leaked') : h('span', {class: 'badge'}, 'reachable')),
      ...c.members.map((m) => h('div', {class: 'step'}, nodeRef(m))),
      c.count > c.members.length ? h('div', {class: 'muted'}, '… ' + (c.count - c.members.length) + ' more') : '',
      h('div', {class: 'refs'}, refText(c)));
    rows.push(el); box.append(el);
  });
  const move = (o) => go('cycles', '', {offset: o});
  box.append(pager(d.cycle_count, offset, n, move));
  pageMove = [() => offset > 0 && move(Math.max(0, offset - n)), () => offset + n < d.cycle_count && move(offset + n)];
  setSelectable(rows, (i) => go('object', d.cycles[i].members[0].addr));
}

// ---- Diff
async function vDiff(box, r) {
  if (summary && !summary.baseline) {
    box.append(h('h1', {}, 'Diff'), h('p', {class: 'sub'}, 'No baseline. Run ', h('code', {}, 'heapgraph view SNAP BASELINE'), ' to see what grew since BASELINE.'));
    return;
  }
  const offset = Number(r.q.get('offset') || 0), n = 100;
  const d = await api('diff', {offset, n});
  box.append(h('h1', {}, 'Diff'), h('p', {class: 'sub'}, 'Since ', h('span', {class: 'addr'}, summary.baseline), ': ', signed(d.new_count - d.old_count, count), pl(Math.abs(d.new_count - d.old_count), ' block'), ', ', signed(d.new_bytes - d.old_bytes, bytes), ' (', bytes(d.old_bytes), ' → ', bytes(d.new_bytes), '). Biggest growth first; click a class for its instances now.'));
  const tb = h('tbody'), rows = [];
  for (const c of d.classes) {
    const open = () => openClassByName(c.class);
    const tr = h('tr', {class: 'click', 'data-class': label(c.class), on: {click: open}},
      h('td', {}, h('span', {class: 'cls'}, label(c.class)), h('span', {class: 'kindpill'}, c.kind), c.new ? h('span', {class: 'badge'}, 'new') : ''),
      h('td', {class: 'n', 'data-f': 'delta_bytes'}, signed(c.delta_bytes, bytes)), h('td', {class: 'n', 'data-f': 'delta_count'}, signed(c.delta_count, count)),
      h('td', {class: 'n'}, bytes(c.old_bytes)), h('td', {class: 'n'}, bytes(c.new_bytes)), h('td', {class: 'n'}, count(c.old_count)), h('td', {class: 'n'}, count(c.new_count)));
    rows.push(tr); tb.append(tr);
  }
  box.append(h('table', {id: 'diff'}, h('thead', {}, h('tr', {}, h('th', {}, 'Class'), h('th', {class: 'n'}, 'Δ bytes'), h('th', {class: 'n'}, 'Δ count'), h('th', {class: 'n'}, 'Bytes before'), h('th', {class: 'n'}, 'Bytes now'), h('th', {class: 'n'}, 'Count before'), h('th', {class: 'n'}, 'Count now'))), tb));
  const move = (o) => go('diff', '', {offset: o});
  box.append(pager(d.class_count, offset, n, move));
  pageMove = [() => offset > 0 && move(Math.max(0, offset - n)), () => offset + n < d.class_count && move(offset + n)];
  setSelectable(rows, (i) => openClassByName(d.classes[i].class));
}
async function openClassByName(name) {
  const d = await api('classes', {q: name === null ? '(unclassified)' : name, n: 1000, sort: 'name'});
  const hit = d.rows.find((c) => label(c.class) === label(name));
  if (hit) go('class', hit.id); else go('classes', '', {q: name || ''});
}

// ---- keyboard
document.addEventListener('keydown', (e) => {
  const t = e.target;
  if (t.tagName === 'INPUT') { if (e.key === 'Escape') t.blur(); return; }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const tabs = ['summary', 'classes', 'dominators', 'stacks', 'leaks', 'cycles', 'diff'];
  if (e.key >= '1' && e.key <= '7') { go(tabs[Number(e.key) - 1]); e.preventDefault(); return; }
  if (e.key === '/') { $('goto-input').focus(); e.preventDefault(); return; }
  if (e.key === '[' && pageMove) { pageMove[0](); return; }
  if (e.key === ']' && pageMove) { pageMove[1](); return; }
  if (!selectable) return;
  const i = selectable.index;
  if (e.key === 'j' || e.key === 'ArrowDown') { select(i + 1); e.preventDefault(); }
  else if (e.key === 'k' || e.key === 'ArrowUp') { select(i - 1); e.preventDefault(); }
  else if (e.key === 'Enter' && i >= 0) { selectable.open(i); e.preventDefault(); }
  else if ((e.key === 'ArrowRight' || e.key === 'l') && i >= 0 && selectable.tree && selectable.rows[i].toggle) { selectable.rows[i].toggle(true); e.preventDefault(); }
  else if ((e.key === 'ArrowLeft' || e.key === 'h') && i >= 0 && selectable.tree && selectable.rows[i].toggle) { selectable.rows[i].toggle(false); e.preventDefault(); }
});
$('goto').addEventListener('submit', (e) => {
  e.preventDefault();
  const v = $('goto-input').value.trim();
  if (v) go('object', v);
  $('goto-input').blur();
});

(async function start() {
  try {
    summary = await api('summary');
    const info = await api('info');
    $('proc').textContent = (info.process || '?') + (info.pid ? ' (' + info.pid + ')' : '') + ' · ' + info.counts.nodes.toLocaleString('en-US') + ' blocks';
    $('foot').textContent = info.file + (summary.baseline ? '  vs  ' + summary.baseline : '');
    if (!summary.baseline) $('tab-diff').classList.add('off');
    if (!summary.stacks) { $('tab-stacks').classList.add('dim'); $('tab-stacks').title = 'no allocation stacks in this snapshot'; }
  } catch (e) {
    main.replaceChildren(h('p', {class: 'err'}, 'Cannot reach the heapgraph server: ' + e.message));
    return;
  }
  window.addEventListener('hashchange', render);
  render();
})();
