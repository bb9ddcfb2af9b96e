// The browser's API client: every read is an ordinary request to the host API with the
// user's own credential (the bearer token kept in sessionStorage, or none, when the browser
// presents a client certificate the host accepts), so RBAC applies as for kubectl.

const TOKEN_KEY = 'flotilla.token';

export function token() { return sessionStorage.getItem(TOKEN_KEY); }
export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
}

/** An API answer that is not a success, with the Status' code, reason and message. */
export class ApiError extends Error {
  constructor(code, reason, message) {
    super(message || reason || `HTTP ${code}`);
    this.code = code;
    this.reason = reason || '';
  }
}

function headers(extra) {
  const h = { Accept: 'application/json', ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

async function failure(resp) {
  let status = null;
  try { status = await resp.json(); } catch { /* not a Status */ }
  return new ApiError(resp.status, status && status.reason, status && status.message || resp.statusText);
}

/** Listeners told about every 401, so the shell can send the user to sign in. */
const unauthorized = new Set();
export function onUnauthorized(fn) { unauthorized.add(fn); }
function check401(err) {
  if (err instanceof ApiError && err.code === 401) for (const fn of unauthorized) fn(err);
  return err;
}

export async function get(path, signal) {
  const resp = await fetch(path, { headers: headers(), signal, cache: 'no-store' });
  if (!resp.ok) throw check401(await failure(resp));
  return resp.json();
}

export async function post(path, body) {
  const resp = await fetch(path, {
    method: 'POST', headers: headers({ 'Content-Type': 'application/json' }),
    body: JSON.stringify(body), cache: 'no-store',
  });
  if (!resp.ok) throw check401(await failure(resp));
  return resp.json();
}

/** Who the API says the current credential is (SelfSubjectReview). */
export async function whoAmI() {
  const r = await post('/apis/authentication.k8s.io/v1/selfsubjectreviews',
    { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' });
  return (r.status && r.status.userInfo) || {};
}

export function key(o) {
  const m = o.metadata || {};
  return m.namespace ? `${m.namespace}/${m.name}` : m.name;
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  if (signal) signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
});

/**
 * A list kept current by a watch: lists `path`, then watches from the list's
 * resourceVersion (streamed with fetch), relisting when the watch expires (410) and
 * retrying with backoff on a dropped connection. `onChange(live)` is called at most every
 * `coalesceMs` with `live.items` (a Map by namespace/name) and `live.error` (an ApiError
 * when the last list or watch failed; a 401 or 403 stops it).
 */
export class LiveList {
  constructor(path, onChange, coalesceMs = 100) {
    this.path = path;
    this.onChange = onChange;
    this.coalesceMs = coalesceMs;
    this.items = new Map();
    this.error = null;
    this.loaded = false;
    this.ctrl = new AbortController();
    this.timer = null;
    this.run();
  }

  stop() { this.ctrl.abort(); clearTimeout(this.timer); }

  changed(now) {
    if (this.ctrl.signal.aborted) return;
    if (now) { clearTimeout(this.timer); this.timer = null; this.onChange(this); return; }
    if (this.timer) return;
    this.timer = setTimeout(() => { this.timer = null; this.onChange(this); }, this.coalesceMs);
  }

  async run() {
    const signal = this.ctrl.signal;
    let rv = null;
    let backoff = 500;
    while (!signal.aborted) {
      try {
        if (rv === null) {
          const list = await get(this.path, signal);
          this.items = new Map((list.items || []).map((o) => [key(o), o]));
          rv = (list.metadata && list.metadata.resourceVersion) || '0';
          this.loaded = true;
          this.error = null;
          this.changed(true);
        }
        rv = await this.watch(rv, signal);
        backoff = 500;
      } catch (e) {
        if (signal.aborted) return;
        this.error = e instanceof ApiError ? e : new ApiError(0, 'NetworkError', String(e && e.message || e));
        this.changed(true);
        if (this.error.code === 401 || this.error.code === 403 || this.error.code === 404) return;
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, 10000);
        rv = null;
      }
    }
  }

  /** Watches from `rv`; returns the last resourceVersion seen, or null to relist. */
  async watch(rv, signal) {
    const sep = this.path.includes('?') ? '&' : '?';
    const url = `${this.path}${sep}watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(rv)}`;
    const resp = await fetch(url, { headers: headers(), signal, cache: 'no-store' });
    if (!resp.ok) {
      const err = check401(await failure(resp));
      if (err.code === 410) return null;
      throw err;
    }
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return rv;
      buf += value;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        const ev = JSON.parse(line);
        const o = ev.object || {};
        if (ev.type === 'ERROR') {
          if (o.code === 410) return null;
          throw new ApiError(o.code || 500, o.reason, o.message);
        }
        if (o.metadata && o.metadata.resourceVersion) rv = o.metadata.resourceVersion;
        if (ev.type === 'BOOKMARK') continue;
        if (ev.type === 'DELETED') this.items.delete(key(o));
        else this.items.set(key(o), o);
        this.error = null;
        this.changed(false);
      }
    }
  }
}

/** The REST path of a kind (`apps/v1`, `Deployment`) from discovery, cached. */
const plurals = new Map();
export async function resourcePath(apiVersion, kind, namespace, name) {
  const gv = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  if (!plurals.has(gv)) {
    const list = await get(gv);
    plurals.set(gv, new Map((list.resources || []).filter((r) => !r.name.includes('/'))
      .map((r) => [r.kind, r])));
  }
  const r = plurals.get(gv).get(kind);
  if (!r) throw new ApiError(404, 'NotFound', `the server serves no ${kind} in ${apiVersion}`);
  const ns = r.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${gv}${ns}/${r.name}/${encodeURIComponent(name)}`;
}
