// viewer/util.js — what the snapshot viewer (app.js) and the dashboard of
// `heapgraph serve` (server/pages/dash.js) share: building DOM nodes from
// data (strings always become text nodes, never HTML), number and byte
// formatting, bars and the class colours.
'use strict';

const $ = (id) => document.getElementById(id);

// ---- DOM helpers: h('td', {class: 'n'}, 'text', node, …) — strings become text nodes.
function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    else if (k === 'style') e.style.cssText = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const k of kids.flat(Infinity)) if (k !== undefined && k !== null && k !== false) e.append(k instanceof Node ? k : String(k));
  return e;
}

// ---- formatting
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
function bytes(n) {
  n = Number(n);
  let u = 0, x = n;
  while (Math.abs(x) >= 1024 && u < UNITS.length - 1) { x /= 1024; u++; }
  const s = u === 0 ? String(x) : x.toFixed(Math.abs(x) < 10 ? 2 : Math.abs(x) < 100 ? 1 : 0);
  return h('span', {class: 'num', title: n.toLocaleString('en-US') + ' bytes', 'data-v': n}, s, h('span', {class: 'unit'}, UNITS[u]));
}
const count = (n) => h('span', {class: 'num', 'data-v': n, title: String(n)}, Number(n).toLocaleString('en-US'));
function signed(n, fmt) {
  const e = fmt(Math.abs(n));
  e.setAttribute('data-v', n);
  e.prepend(n > 0 ? '+' : n < 0 ? '−' : '');
  e.classList.add(n > 0 ? 'pos' : n < 0 ? 'neg' : 'zero');
  return e;
}
const pl = (n, word) => (Number(n) === 1 ? word : word + 's');
const pct = (a, b) => (b ? (100 * a / b).toFixed(1) : '0.0') + '%';
function duration(ns) {
  ns = Number(ns);
  if (ns >= 1e9) return (ns / 1e9).toFixed(2) + ' s';
  if (ns >= 1e6) return (ns / 1e6).toFixed(1) + ' ms';
  if (ns >= 1e3) return (ns / 1e3).toFixed(1) + ' µs';
  return ns + ' ns';
}
const label = (c) => (c === null || c === undefined ? '(unclassified)' : c);
function nodeLink(n) {
  return h('a', {href: '#/object/' + encodeURIComponent(n.addr), class: 'addr', 'data-addr': n.addr}, n.addr);
}
function nodeRef(n) {
  return h('span', {}, nodeLink(n), ' ', h('span', {class: 'cls', 'data-class': label(n.class)}, label(n.class)), ' ', h('span', {class: 'muted'}, '(', bytes(n.size), ')'));
}
function bar(v, max) {
  return h('div', {class: 'bar-bg'}, h('div', {class: 'bar-fg', style: 'width:' + (max > 0 ? Math.max(0.5, 100 * v / max) : 0) + '%'}));
}

const PALETTE = ['#9cc2ff', '#a8e0c4', '#ffd59e', '#d7c4ff', '#ffb8c6', '#b9e6f2', '#e3e7a0', '#f5c6a5'];
function colorOf(name) { let x = 0; for (const ch of String(name)) x = (x * 31 + ch.charCodeAt(0)) >>> 0; return PALETTE[x % PALETTE.length]; }
