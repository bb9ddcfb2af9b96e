// DOM helpers: elements are built with textContent and attributes only (never innerHTML with
// data), so nothing an object carries can become markup.

/** h('a', {href: '/x', class: 'c', onclick: fn}, 'text', child) */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A page-level message: kind is 'error', 'warn' or 'info'. */
export function notice(kind, title, ...body) {
  return h('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' },
    h('strong', {}, title), body.length ? h('p', {}, ...body) : null);
}

/** "3m ago" from an RFC 3339 time. */
export function ago(time) {
  if (!time) return '';
  const s = Math.max(0, (Date.now() - Date.parse(time)) / 1000);
  if (s < 60) return `${Math.floor(s)}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}
