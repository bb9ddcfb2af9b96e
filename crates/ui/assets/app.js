// The shell: navigation, the sign-in page, the routes and what happens on a refused
// credential. Routes live here only (the server answers any non-asset /ui/ path with this
// page, with 404 for paths crates/ui's is_page does not know).

import { ApiError, onUnauthorized, setToken, token, whoAmI } from './api.js';
import { fill, h, notice } from './dom.js';
import { apiErrorNotice, renderFleet, renderScheduling, renderWorkload, renderWorkloads } from './views.js';

const BASE = '/ui/';
const NAV = [['Fleet', ''], ['Workloads', 'workloads'], ['Scheduling', 'scheduling']];

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');
let stop = () => {};
let identity = null;

/** The page for `rest` (the path under /ui/) or null when there is none. */
function route(rest, query) {
  const parts = rest.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0 || (parts.length === 1 && parts[0] === 'fleet')) {
    return { title: 'Fleet', nav: '', show: () => renderFleet(main) };
  }
  if (parts[0] === 'workloads' && parts.length === 1) {
    return { title: 'Workloads', nav: 'workloads', show: () => renderWorkloads(main, query, navigate) };
  }
  if (parts[0] === 'workloads' && parts.length === 3) {
    return { title: `${parts[2]} · Workloads`, nav: 'workloads', show: () => renderWorkload(main, parts[1], parts[2]) };
  }
  if (parts[0] === 'scheduling' && parts.length === 1) {
    return { title: 'Scheduling', nav: 'scheduling', show: () => renderScheduling(main, query, navigate) };
  }
  if (parts[0] === 'login' && parts.length === 1) {
    return { title: 'Sign in', nav: null, public: true, show: () => renderLogin(query) };
  }
  return null;
}

function drawNav(current) {
  fill(nav, h('ul', {}, NAV.map(([label, path]) => h('li', {},
    h('a', { href: BASE + path, 'data-nav': '', 'aria-current': current === path ? 'page' : null }, label)))));
  fill(who, identity
    ? [h('span', { class: 'muted' }, 'Signed in as '), h('strong', { id: 'who-name' }, identity.username || '?'), ' ',
      h('button', { type: 'button', class: 'link', onclick: signOut }, 'Sign out')]
    : null);
}

function signOut() {
  setToken(null);
  identity = null;
  navigate(`${BASE}login?signedout=1`);
}

export function navigate(url, replace) {
  if (replace) history.replaceState(null, '', url); else history.pushState(null, '', url);
  render();
}

async function render() {
  stop();
  stop = () => {};
  const url = new URL(location.href);
  const rest = url.pathname.startsWith(BASE) ? url.pathname.slice(BASE.length) : '';
  const page = route(rest, url.searchParams);
  if (!page) {
    document.title = 'Not found · Flotilla';
    drawNav(null);
    fill(main, h('h1', {}, 'Page not found'),
      notice('error', `There is no page at ${url.pathname}.`, 'The link may be wrong or out of date.'),
      h('p', {}, h('a', { href: BASE, 'data-nav': '' }, 'Go to the Fleet page')));
    main.focus();
    return;
  }
  document.title = `${page.title} · Flotilla`;
  if (!page.public && !identity) {
    try {
      identity = await whoAmI();
    } catch (e) {
      if (e instanceof ApiError && e.code === 401) return; // onUnauthorized sent us to sign in
      if (!(e instanceof ApiError && e.code === 403)) {
        drawNav(null);
        fill(main, h('h1', {}, page.title), apiErrorNotice(e, 'who you are'));
        return;
      }
      identity = { username: '(unknown)' };
    }
  }
  drawNav(page.nav);
  const stopper = await page.show();
  stop = typeof stopper === 'function' ? stopper : () => {};
}

/** The sign-in page; `reason` says why the user is here. */
function renderLogin(query) {
  const reason = query.get('reason');
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-describedby': 'token-help' });
  const message = h('div', { id: 'login-message' });
  const why = reason === 'expired'
    ? notice('error', 'Your credential was refused (401 Unauthorized).', 'The token is invalid or has expired. Sign in with a new one.')
    : reason === 'missing'
      ? notice('error', 'You are not signed in (401 Unauthorized).', 'The API needs a credential: paste a bearer token, or open the UI with a browser that presents a client certificate the host accepts.')
      : query.get('signedout') ? notice('info', 'Signed out.') : null;
  async function submit(e, useCertificate) {
    if (e) e.preventDefault();
    setToken(useCertificate ? null : input.value.trim());
    fill(message, h('p', { class: 'muted' }, 'Checking…'));
    try {
      identity = await whoAmI();
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 403)) {
        setToken(null);
        fill(message, err instanceof ApiError && err.code === 401
          ? notice('error', useCertificate ? 'No client certificate was accepted (401 Unauthorized).' : 'That token was refused (401 Unauthorized).',
            useCertificate ? 'Paste a bearer token instead.' : 'It is invalid or has expired.')
          : apiErrorNotice(err, 'who you are'));
        return;
      }
      identity = { username: '(unknown)' };
    }
    const next = query.get('next') || '';
    navigate(next.startsWith(BASE) ? next : BASE, true);
  }
  drawNav(null);
  fill(main, h('h1', {}, 'Sign in'), why, message,
    h('form', { class: 'login', onsubmit: (e) => submit(e, false) },
      h('label', { for: 'token' }, 'Bearer token'), input,
      h('p', { id: 'token-help', class: 'muted small' },
        'The token is kept in this tab only (sessionStorage) and sent to the host API with each request; you see what its RBAC allows. ',
        'Get one with ', h('code', {}, 'kubectl create token <serviceaccount> -n <namespace>'), '.'),
      h('div', { class: 'buttons' },
        h('button', { type: 'submit', id: 'sign-in' }, 'Sign in'),
        h('button', { type: 'button', class: 'secondary', onclick: () => submit(null, true) }, 'Use my client certificate'))));
  input.focus();
}

onUnauthorized(() => {
  const url = new URL(location.href);
  if (url.pathname === `${BASE}login`) return;
  identity = null;
  const reason = token() ? 'expired' : 'missing';
  setToken(null);
  navigate(`${BASE}login?reason=${reason}&next=${encodeURIComponent(url.pathname + url.search)}`, true);
});

document.addEventListener('click', (e) => {
  const a = e.target.closest && e.target.closest('a[data-nav]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const url = new URL(a.href);
  if (url.origin !== location.origin) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
  main.focus();
});
window.addEventListener('popstate', render);
render();
