// The pages: Fleet, Workloads (a virtualised list), a workload's detail and Scheduling.
// Each `render*` fills `main` and returns a function that stops its watches.

import { ApiError, LiveList, get, resourcePath } from './api.js';
import { ago, fill, h, notice } from './dom.js';

// ---- facts about Karmada objects --------------------------------------------------------

const POLICY_NAME = 'propagationpolicy.karmada.io/name';
const CLUSTER_POLICY_NAME = 'clusterpropagationpolicy.karmada.io/name';
const BINDING_ID = 'resourcebinding.karmada.io/permanent-id';
const CLUSTER_BINDING_ID = 'clusterresourcebinding.karmada.io/permanent-id';
/** The namespace segment of a ClusterResourceBinding's page (no namespace is named so). */
const CLUSTER_SCOPE = '_cluster';
/** Where the events of cluster-scoped objects are recorded. */
const CLUSTER_EVENTS_NAMESPACE = 'default';

/** The API path of a ResourceBinding, or of a ClusterResourceBinding when `ns` is CLUSTER_SCOPE. */
function bindingPath(ns, name) {
  const base = '/apis/work.karmada.io/v1alpha2';
  return ns === CLUSTER_SCOPE
    ? `${base}/clusterresourcebindings/${encodeURIComponent(name)}`
    : `${base}/namespaces/${encodeURIComponent(ns)}/resourcebindings/${encodeURIComponent(name)}`;
}

/** A workload page's link. */
function workloadHref(ns, name) {
  return `/ui/workloads/${encodeURIComponent(ns || CLUSTER_SCOPE)}/${encodeURIComponent(name)}`;
}

/** " in <ns>", or that the template is cluster-scoped. */
function scopeText(ns) {
  return ns && ns !== CLUSTER_SCOPE ? ` in ${ns}` : ' (cluster-scoped)';
}
const EXECUTION_NAMESPACE_PREFIX = 'karmada-es-';
/** Event reasons of scheduling decisions, failovers and evictions. */
const SCHEDULING_REASONS = new Set([
  'ScheduleBindingSucceed', 'ScheduleBindingFailed', 'EvictWorkloadFromCluster',
  'TaintClusterSucceed', 'TaintClusterFailed', 'GracefulEvictionTimeout',
  'ApplicationFailover', 'ClusterFailover', 'PreemptPolicySucceed', 'PreemptPolicyFailed',
]);

function condition(obj, type) {
  return ((obj.status && obj.status.conditions) || []).find((c) => c.type === type) || null;
}

/** 'Ready', 'NotReady' or 'Unknown' from a Cluster's Ready condition. */
export function clusterState(c) {
  const ready = condition(c, 'Ready');
  if (!ready || ready.status === 'Unknown') return 'Unknown';
  return ready.status === 'True' ? 'Ready' : 'NotReady';
}

const SUFFIX = {
  n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

/** A Kubernetes quantity ("500m", "8Gi", "1e3") as a number; NaN when it is not one. */
export function quantity(q) {
  if (q === undefined || q === null) return 0;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(String(q).trim());
  if (!m || !(m[2] in SUFFIX)) return NaN;
  return Number(m[1]) * SUFFIX[m[2]];
}

function formatAmount(resource, n) {
  if (!Number.isFinite(n)) return '?';
  if (resource === 'memory') {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
    return `${n >= 10 || i === 0 ? Math.round(n) : n.toFixed(1)} ${units[i]}`;
  }
  if (resource === 'cpu') return `${Number.isInteger(n) ? n : n.toFixed(2)} CPU`;
  return `${Math.round(n)} pod${Math.round(n) === 1 ? '' : 's'}`;
}

function meter(resource, label, used, total) {
  const pct = total > 0 ? Math.min(100, (used / total) * 100) : 0;
  const text = `${formatAmount(resource, used)} of ${formatAmount(resource, total)} (${Math.round(pct)}%)`;
  const level = pct >= 90 ? 'high' : pct >= 70 ? 'mid' : 'low';
  return h('div', { class: 'meter-row' },
    h('span', { class: 'meter-label' }, label),
    h('div', {
      class: `meter ${level}`, role: 'meter', 'aria-label': `${label} allocated`,
      'aria-valuemin': 0, 'aria-valuemax': total, 'aria-valuenow': used, 'aria-valuetext': text,
      dataset: { resource, used: String(used), total: String(total) },
    }, h('span', { class: 'meter-fill', style: { width: `${pct}%` } })),
    h('span', { class: 'meter-text' }, text));
}

// ---- Fleet --------------------------------------------------------------------------------

function clusterCard(c) {
  const state = clusterState(c);
  const ready = condition(c, 'Ready');
  const spec = c.spec || {};
  const status = c.status || {};
  const summary = status.resourceSummary || {};
  const alloc = summary.allocatable || {};
  const used = summary.allocated || {};
  const taints = spec.taints || [];
  const place = [spec.region, spec.zone || (spec.zones || []).join(', ')].filter(Boolean).join(' / ');
  return h('li', { class: `card ${state.toLowerCase()}`, dataset: { cluster: c.metadata.name, state } },
    h('article', { 'aria-labelledby': `cluster-${c.metadata.name}` },
      h('header', { class: 'card-head' },
        h('h3', { id: `cluster-${c.metadata.name}` }, c.metadata.name),
        h('span', { class: `badge ${state.toLowerCase()}`, title: ready ? `${ready.reason || ''}: ${ready.message || ''}` : 'no Ready condition yet' }, state)),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Version'), h('dd', {}, status.kubernetesVersion || '—'),
        h('dt', {}, 'Region / zone'), h('dd', {}, place || '—'),
        h('dt', {}, 'Taints'), h('dd', { class: 'taints' }, taints.length
          ? taints.map((t) => h('code', {}, `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`))
          : 'none')),
      ready && state !== 'Ready' ? h('p', { class: 'reason' }, `${ready.reason || ''} ${ready.message || ''}`.trim()) : null,
      meter('cpu', 'CPU', quantity(used.cpu), quantity(alloc.cpu)),
      meter('memory', 'Memory', quantity(used.memory), quantity(alloc.memory)),
      meter('pods', 'Pods', quantity(used.pods), quantity(alloc.pods))));
}

export function renderFleet(main) {
  const counts = h('p', { class: 'counts', 'aria-live': 'polite' });
  const status = h('div');
  const grid = h('ul', { class: 'cards', 'aria-label': 'Member clusters' });
  const stateSel = h('select', { id: 'f-state', name: 'state' },
    option('', 'all states', ''), ['Ready', 'NotReady', 'Unknown'].map((st) => option(st, st, '')));
  const nameInput = h('input', { id: 'f-name', name: 'name', type: 'search', placeholder: 'name contains', autocomplete: 'off' });
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter clusters', onsubmit: (e) => e.preventDefault() },
    h('label', { for: 'f-state' }, 'State'), stateSel, h('label', { for: 'f-name' }, 'Name'), nameInput);
  fill(main, h('h1', {}, 'Fleet'), form, counts, status, grid);
  const cards = new Map();
  const shows = (entry) => (!stateSel.value || entry.state === stateSel.value)
    && (!nameInput.value || entry.name.includes(nameInput.value.trim()));
  const filter = () => { for (const entry of cards.values()) entry.el.hidden = !shows(entry); };
  stateSel.addEventListener('change', filter);
  nameInput.addEventListener('input', filter);
  const live = new LiveList('/apis/cluster.karmada.io/v1alpha1/clusters', (l) => {
    fill(status, l.error ? apiErrorNotice(l.error, 'the member clusters') : null);
    if (!l.loaded) return;
    const names = [...l.items.keys()].sort();
    const by = { Ready: 0, NotReady: 0, Unknown: 0 };
    const seen = new Set();
    let prev = null;
    for (const name of names) {
      const c = l.items.get(name);
      by[clusterState(c)] += 1;
      seen.add(name);
      let entry = cards.get(name);
      if (!entry || entry.rv !== c.metadata.resourceVersion) {
        const card = clusterCard(c);
        if (entry) entry.el.replaceWith(card);
        entry = { el: card, rv: c.metadata.resourceVersion, state: clusterState(c), name };
        card.hidden = !shows(entry);
        cards.set(name, entry);
      }
      // Keep the cards in name order, moving only what is out of place.
      const want = prev ? prev.nextSibling : grid.firstChild;
      if (want !== entry.el) grid.insertBefore(entry.el, want);
      prev = entry.el;
    }
    for (const [name, entry] of cards) {
      if (!seen.has(name)) { entry.el.remove(); cards.delete(name); }
    }
    counts.textContent = `${names.length} clusters: ${by.Ready} Ready, ${by.NotReady} NotReady, ${by.Unknown} Unknown`;
    if (!names.length) fill(status, notice('info', 'No member clusters yet.', 'Join one with karmadactl join or flotilla local-up.'));
  });
  return () => live.stop();
}

// ---- Workloads ----------------------------------------------------------------------------

/** What the list shows of a ResourceBinding, computed once per version. */
export function workloadRow(rb) {
  const spec = rb.spec || {};
  const res = spec.resource || {};
  const ann = rb.metadata.annotations || {};
  const rs = (spec.placement && spec.placement.replicaScheduling) || {};
  let placement = rs.replicaSchedulingType || 'Duplicated';
  if (placement === 'Divided') {
    const pref = rs.replicaDivisionPreference || 'Aggregated';
    const dyn = rs.weightPreference && rs.weightPreference.dynamicWeight;
    placement += ` · ${pref}${dyn ? ` (${dyn})` : ''}`;
  }
  const agg = new Map(((rb.status && rb.status.aggregatedStatus) || []).map((a) => [a.clusterName, a]));
  const clusters = (spec.clusters || []).map((t) => {
    const a = agg.get(t.name) || {};
    const st = a.status || {};
    const ready = st.readyReplicas || 0;
    return {
      name: t.name, desired: t.replicas || 0, ready, applied: a.applied, health: a.health,
      message: a.appliedMessage || '',
    };
  });
  const scheduled = condition(rb, 'Scheduled');
  const applied = condition(rb, 'FullyApplied');
  const healthy = !!scheduled && scheduled.status === 'True' && !!applied && applied.status === 'True'
    && clusters.every((c) => c.applied !== false && c.health !== 'Unhealthy' && (c.desired === 0 || c.ready >= c.desired));
  return {
    key: rb.metadata.namespace ? `${rb.metadata.namespace}/${rb.metadata.name}` : rb.metadata.name,
    rv: rb.metadata.resourceVersion, namespace: rb.metadata.namespace || '', binding: rb.metadata.name,
    kind: res.kind || '?', name: res.name || rb.metadata.name,
    policy: ann[POLICY_NAME] || ann[CLUSTER_POLICY_NAME] || '—',
    placement, clusters, scheduled, applied, healthy,
  };
}

function conditionBadge(label, c) {
  const state = !c ? 'Unknown' : c.status === 'True' ? 'True' : c.status === 'False' ? 'False' : 'Unknown';
  return h('span', {
    class: `cond ${state.toLowerCase()}`, title: c ? `${c.reason || ''}: ${c.message || ''}` : 'not reported yet',
    dataset: { condition: label, status: state },
  }, `${label}: ${state}`);
}

function stackedBar(w) {
  const total = w.clusters.reduce((s, c) => s + c.desired, 0);
  const text = w.clusters.map((c) => `${c.name} ${c.ready}/${c.desired}`).join(' · ') || 'not scheduled';
  return h('div', { class: 'stack-wrap' },
    h('div', { class: 'stack', role: 'img', 'aria-label': `Replicas per cluster, ready of desired: ${text}` },
      w.clusters.map((c, i) => h('span', {
        class: `seg c${i % 6}`, title: `${c.name}: ${c.ready} ready of ${c.desired} desired${c.message ? ` — ${c.message}` : ''}`,
        style: { width: `${total > 0 ? (c.desired / total) * 100 : 100 / w.clusters.length}%` },
        dataset: { cluster: c.name, desired: String(c.desired), ready: String(c.ready) },
      }, h('span', { class: 'seg-fill', style: { width: `${c.desired > 0 ? Math.min(100, (c.ready / c.desired) * 100) : (c.applied ? 100 : 0)}%` } })))),
    h('span', { class: 'stack-text' }, text));
}

const ROW_HEIGHT = 64;
const OVERSCAN = 6;

/** A list that renders only the rows in view (plus a few), for thousands of workloads. */
class VirtualList {
  constructor(renderRow) {
    this.renderRow = renderRow;
    this.rows = [];
    this.spacer = h('div', { class: 'vspacer' });
    this.list = h('ul', { class: 'vlist-items', 'aria-label': 'Workloads' });
    this.el = h('div', { class: 'vlist', tabindex: 0, onscroll: () => this.draw(), onkeydown: (e) => this.key(e) },
      this.spacer, this.list);
    this.drawn = '';
    // Row elements by row object: an unchanged workload keeps its element (and the focus
    // inside it) across redraws.
    this.cache = new WeakMap();
    this.resize = () => this.draw(true);
    window.addEventListener('resize', this.resize);
  }

  key(e) {
    const step = { ArrowDown: ROW_HEIGHT, ArrowUp: -ROW_HEIGHT, PageDown: this.el.clientHeight, PageUp: -this.el.clientHeight }[e.key];
    if (step === undefined) return;
    this.el.scrollTop += step;
    e.preventDefault();
  }

  set(rows) { this.rows = rows; this.draw(true); }

  draw(force) {
    const n = this.rows.length;
    this.spacer.style.height = `${n * ROW_HEIGHT}px`;
    const first = Math.max(0, Math.floor(this.el.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(n, Math.ceil((this.el.scrollTop + (this.el.clientHeight || 600)) / ROW_HEIGHT) + OVERSCAN);
    const span = `${first}:${last}`;
    if (!force && span === this.drawn) return;
    this.drawn = span;
    this.list.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
    let cur = this.list.firstChild;
    for (let i = first; i < last; i += 1) {
      const row = this.rows[i];
      let li = this.cache.get(row);
      if (!li) { li = this.renderRow(row); this.cache.set(row, li); }
      li.setAttribute('aria-setsize', n);
      li.setAttribute('aria-posinset', i + 1);
      if (cur === li) cur = cur.nextSibling;
      else this.list.insertBefore(li, cur);
    }
    while (cur) { const next = cur.nextSibling; cur.remove(); cur = next; }
  }

  stop() { window.removeEventListener('resize', this.resize); }
}

function workloadItem(w) {
  return h('li', { class: `wl ${w.healthy ? 'ok' : 'bad'}`, style: { height: `${ROW_HEIGHT}px` }, dataset: { workload: w.key, rv: w.rv } },
    h('div', { class: 'wl-name' },
      h('a', { href: workloadHref(w.namespace, w.binding), 'data-nav': '' },
        `${w.kind}/${w.name}`),
      h('span', { class: 'muted' }, scopeText(w.namespace)),
      h('div', { class: 'muted small' }, `policy ${w.policy} · ${w.placement}`)),
    stackedBar(w),
    h('div', { class: 'wl-conds' }, conditionBadge('Scheduled', w.scheduled), conditionBadge('FullyApplied', w.applied),
      w.healthy ? null : h('span', { class: 'sr-only' }, 'not healthy')));
}

function option(value, label, selected) {
  return h('option', { value, selected: value === selected }, label);
}

export function renderWorkloads(main, query, navigate) {
  const ns = query.get('namespace') || '';
  const filters = {
    cluster: query.get('cluster') || '', kind: query.get('kind') || '', unhealthy: query.get('unhealthy') === '1',
  };
  const nsInput = h('input', { id: 'f-ns', name: 'namespace', value: ns, placeholder: 'all namespaces', autocomplete: 'off' });
  const clusterSel = h('select', { id: 'f-cluster', name: 'cluster' });
  const kindSel = h('select', { id: 'f-kind', name: 'kind' });
  const unhealthy = h('input', { id: 'f-unhealthy', type: 'checkbox', name: 'unhealthy', checked: filters.unhealthy });
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter workloads', onsubmit: (e) => { e.preventDefault(); apply(true); } },
    h('label', { for: 'f-ns' }, 'Namespace'), nsInput,
    h('label', { for: 'f-cluster' }, 'Cluster'), clusterSel,
    h('label', { for: 'f-kind' }, 'Kind'), kindSel,
    h('span', { class: 'check' }, unhealthy, h('label', { for: 'f-unhealthy' }, 'Not healthy only')),
    h('button', { type: 'submit' }, 'Apply'));
  const counts = h('p', { class: 'counts', 'aria-live': 'polite' });
  const status = h('div');
  const vlist = new VirtualList(workloadItem);
  fill(main, h('h1', {}, 'Workloads'), form, counts, status, vlist.el);

  function apply(reloadNamespace) {
    const q = new URLSearchParams();
    const nsValue = nsInput.value.trim();
    if (nsValue) q.set('namespace', nsValue);
    if (clusterSel.value) q.set('cluster', clusterSel.value);
    if (kindSel.value) q.set('kind', kindSel.value);
    if (unhealthy.checked) q.set('unhealthy', '1');
    const url = `/ui/workloads${q.toString() ? `?${q}` : ''}`;
    if (reloadNamespace && nsValue !== ns) { navigate(url); return; }
    history.replaceState(null, '', url);
    filters.cluster = clusterSel.value; filters.kind = kindSel.value; filters.unhealthy = unhealthy.checked;
    draw();
  }
  for (const el of [clusterSel, kindSel, unhealthy]) el.addEventListener('change', () => apply(false));

  const rows = new Map();
  let live = null;
  function draw() {
    fill(status, live.error ? apiErrorNotice(live.error, ns ? `workloads in namespace ${ns}` : 'workloads in all namespaces',
      live.error.code === 403 && !ns ? 'Enter a namespace you may read above.' : null) : null,
    // Cluster-scoped templates are shown to whoever may list their bindings; a user who may
    // not is not told twice.
    clusterLive && clusterLive.error && clusterLive.error.code !== 403
      ? apiErrorNotice(clusterLive.error, 'cluster-scoped workloads') : null);
    vlist.el.hidden = !live.loaded;
    if (!live.loaded) return;
    const clusters = new Set();
    const kinds = new Set();
    const all = [];
    const items = clusterLive && !clusterLive.error ? [...live.items, ...clusterLive.items] : [...live.items];
    for (const [k, rb] of items) {
      let r = rows.get(k);
      if (!r || r.rv !== rb.metadata.resourceVersion) {
        r = { rv: rb.metadata.resourceVersion, w: workloadRow(rb) };
        rows.set(k, r);
      }
      all.push(r.w);
      for (const c of r.w.clusters) clusters.add(c.name);
      kinds.add(r.w.kind);
    }
    for (const k of rows.keys()) if (!live.items.has(k) && !(clusterLive && clusterLive.items.has(k))) rows.delete(k);
    fill(clusterSel, option('', 'all clusters', filters.cluster), [...clusters].sort().map((c) => option(c, c, filters.cluster)));
    fill(kindSel, option('', 'all kinds', filters.kind), [...kinds].sort().map((c) => option(c, c, filters.kind)));
    const shown = all.filter((w) => (!filters.cluster || w.clusters.some((c) => c.name === filters.cluster))
      && (!filters.kind || w.kind === filters.kind) && (!filters.unhealthy || !w.healthy));
    shown.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const bad = all.filter((w) => !w.healthy).length;
    counts.textContent = `${shown.length} of ${all.length} workloads shown; ${bad} not healthy`;
    vlist.set(shown);
  }
  const path = ns
    ? `/apis/work.karmada.io/v1alpha2/namespaces/${encodeURIComponent(ns)}/resourcebindings`
    : '/apis/work.karmada.io/v1alpha2/resourcebindings';
  let clusterLive = null;
  live = new LiveList(path, draw, 150);
  if (!ns) clusterLive = new LiveList('/apis/work.karmada.io/v1alpha2/clusterresourcebindings', draw, 150);
  return () => { live.stop(); if (clusterLive) clusterLive.stop(); vlist.stop(); };
}

// ---- Workload detail ----------------------------------------------------------------------

/** Keys the server, kubectl or the member set, left out of the diff. */
const NOISE_METADATA = ['uid', 'resourceVersion', 'generation', 'creationTimestamp', 'managedFields', 'ownerReferences', 'selfLink'];
const NOISE_ANNOTATIONS = ['kubectl.kubernetes.io/last-applied-configuration'];

/** YAML-like lines of `v` (keys sorted), for reading and diffing line by line. */
export function yamlLines(v, indent = '') {
  const scalar = (x) => (typeof x === 'string' ? (/^[\w./@:-]+$/.test(x) && !/^(true|false|null|[-\d.]+)$/.test(x) ? x : JSON.stringify(x)) : JSON.stringify(x));
  const out = [];
  if (Array.isArray(v)) {
    if (!v.length) return [`${indent}[]`];
    for (const item of v) {
      if (item && typeof item === 'object' && Object.keys(item).length) {
        const inner = yamlLines(item, `${indent}  `);
        out.push(`${indent}- ${inner[0].trimStart()}`, ...inner.slice(1));
      } else out.push(`${indent}- ${item && typeof item === 'object' ? (Array.isArray(item) ? '[]' : '{}') : scalar(item)}`);
    }
    return out;
  }
  if (v && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    if (!keys.length) return [`${indent}{}`];
    for (const k of keys) {
      const x = v[k];
      if (x && typeof x === 'object' && (Array.isArray(x) ? x.length : Object.keys(x).length)) {
        out.push(`${indent}${k}:`, ...yamlLines(x, Array.isArray(x) ? indent : `${indent}  `));
      } else out.push(`${indent}${k}: ${x && typeof x === 'object' ? (Array.isArray(x) ? '[]' : '{}') : scalar(x)}`);
    }
    return out;
  }
  return [`${indent}${scalar(v)}`];
}

/** The object without status and what the server, kubectl or the member set, as lines. */
function comparable(obj) {
  const o = JSON.parse(JSON.stringify(obj || {}));
  delete o.status;
  if (o.metadata) {
    for (const k of NOISE_METADATA) delete o.metadata[k];
    for (const k of NOISE_ANNOTATIONS) if (o.metadata.annotations) delete o.metadata.annotations[k];
  }
  return yamlLines(o);
}

/** A line diff (longest common subsequence) of `a` to `b`: [[' '|'-'|'+', line], ...]. */
export function diffLines(a, b) {
  const n = a.length; const m = b.length;
  if (n * m > 4e6) return [...a.map((l) => ['-', l]), ...b.map((l) => ['+', l])];
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i -= 1) {
    for (let j = m - 1; j >= 0; j -= 1) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0; let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push([' ', a[i]]); i += 1; j += 1; } else if (lcs[i + 1][j] >= lcs[i][j + 1]) { out.push(['-', a[i]]); i += 1; } else { out.push(['+', b[j]]); j += 1; }
  }
  while (i < n) { out.push(['-', a[i]]); i += 1; }
  while (j < m) { out.push(['+', b[j]]); j += 1; }
  return out;
}

function diffView(template, manifest) {
  const d = diffLines(comparable(template), comparable(manifest));
  const changed = d.filter(([s]) => s !== ' ').length;
  return h('details', { class: 'diff', open: changed > 0 && changed < 60 },
    h('summary', {}, changed ? `Manifest differs from the template in ${changed} lines (- template, + this cluster)` : 'Manifest is the template as is'),
    h('pre', { tabindex: 0, 'aria-label': 'Diff of the template to this cluster\'s manifest' },
      d.map(([s, l]) => h('span', { class: s === '+' ? 'add' : s === '-' ? 'del' : 'same' }, `${s} ${l}`))));
}

function conditionTable(conds) {
  if (!conds.length) return h('p', { class: 'muted' }, 'No conditions reported yet.');
  return h('table', {},
    h('thead', {}, h('tr', {}, ['Type', 'Status', 'Reason', 'Message', 'Since'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, conds.map((c) => h('tr', {},
      h('td', {}, c.type), h('td', {}, conditionBadge(c.type, c)), h('td', {}, c.reason || ''), h('td', {}, c.message || ''),
      h('td', {}, ago(c.lastTransitionTime))))));
}

function eventsTable(events) {
  if (!events.length) return h('p', { class: 'muted' }, 'No events.');
  return h('table', { class: 'events' },
    h('thead', {}, h('tr', {}, ['When', 'Type', 'Reason', 'Object', 'Message'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, events.map((e) => h('tr', { class: e.type === 'Warning' ? 'warning' : '', dataset: { reason: e.reason || '' } },
      h('td', {}, ago(eventTime(e))), h('td', {}, e.type || ''), h('td', {}, e.reason || ''),
      h('td', {}, eventObject(e.involvedObject || {})),
      h('td', {}, e.message || '')))));
}

/** An event's object, linked to its workload page when it is a ResourceBinding. */
function eventObject(o) {
  const text = `${o.kind || ''} ${o.namespace ? `${o.namespace}/` : ''}${o.name || ''}`;
  if ((o.kind === 'ResourceBinding' && o.namespace && o.name) || (o.kind === 'ClusterResourceBinding' && o.name)) {
    return h('a', { href: workloadHref(o.namespace, o.name), 'data-nav': '' }, text);
  }
  return text;
}

function eventTime(e) {
  return e.lastTimestamp || e.eventTime || (e.series && e.series.lastObservedTime) || e.firstTimestamp || e.metadata.creationTimestamp;
}

function byTimeDesc(a, b) {
  return Date.parse(eventTime(b) || 0) - Date.parse(eventTime(a) || 0);
}

async function clusterSection(rb, cluster, template) {
  const label = rb.metadata.namespace ? BINDING_ID : CLUSTER_BINDING_ID;
  const id = (rb.metadata.labels || {})[label];
  const section = h('section', { class: 'cluster-work', dataset: { cluster: cluster.name } },
    h('h3', {}, `${cluster.name}`, h('span', { class: 'muted' }, ` · ${cluster.replicas || 0} desired`)));
  if (!id) { section.append(notice('warn', 'This binding has no permanent id yet; its Works cannot be found.')); return section; }
  try {
    const ns = `${EXECUTION_NAMESPACE_PREFIX}${cluster.name}`;
    const works = await get(`/apis/work.karmada.io/v1alpha1/namespaces/${encodeURIComponent(ns)}/works?labelSelector=${encodeURIComponent(`${label}=${id}`)}`);
    if (!works.items.length) { section.append(notice('warn', `No Work in ${ns} yet.`)); return section; }
    for (const work of works.items) {
      const applied = condition(work, 'Applied');
      const state = !applied ? 'Unknown' : applied.status;
      section.append(h('p', { class: 'applied', dataset: { applied: state } },
        conditionBadge('Applied', applied), ' ',
        h('span', {}, applied ? `${applied.reason || ''}${applied.message ? `: ${applied.message}` : ''}` : 'not applied yet'),
        h('span', { class: 'muted' }, ` (Work ${ns}/${work.metadata.name})`)));
      for (const m of ((work.spec && work.spec.workload && work.spec.workload.manifests) || [])) section.append(diffView(template, m));
    }
  } catch (e) {
    section.append(apiErrorNotice(e, `the Works for ${cluster.name}`));
  }
  return section;
}

/**
 * A workload's page: read when opened and again whenever its binding changes (a watch on
 * that one binding: its status moves as the Works are applied), keeping the scroll position;
 * Refresh reads it again by hand.
 */
export function renderWorkload(main, namespace, name) {
  const title = `Workload ${name}${scopeText(namespace)}`;
  fill(main, h('h1', {}, title), h('p', { class: 'notice' }, 'Loading…'));
  let painting = null;
  let again = false;
  let shownRv = null;
  let stopped = false;
  async function paint() {
    if (painting) { again = true; return; }
    painting = read().then((children) => {
      if (stopped) return;
      const y = window.scrollY;
      fill(main, children);
      window.scrollTo(0, y);
    }).finally(() => {
      painting = null;
      if (again && !stopped) { again = false; paint(); }
    });
  }
  async function read() {
    let rb;
    try {
      rb = await get(bindingPath(namespace, name));
    } catch (e) {
      return [h('h1', {}, title), apiErrorNotice(e, `the binding ${name}${scopeText(namespace)}`)];
    }
    shownRv = rb.metadata.resourceVersion;
    const w = workloadRow(rb);
    const res = rb.spec.resource || {};
    let template = null;
    let templateNote = null;
    try {
      template = await get(await resourcePath(res.apiVersion, res.kind, res.namespace, res.name));
    } catch (e) {
      templateNote = apiErrorNotice(e, `the template ${res.kind} ${res.name}`);
    }
    const sections = await Promise.all((rb.spec.clusters || []).map((c) => clusterSection(rb, c, template)));
    let events = [];
    let eventsNote = null;
    try {
      const eventsNs = namespace === CLUSTER_SCOPE ? CLUSTER_EVENTS_NAMESPACE : namespace;
      const list = await get(`/api/v1/namespaces/${encodeURIComponent(eventsNs)}/events`);
      events = list.items.filter((e) => [res.name, name].includes((e.involvedObject || {}).name)).sort(byTimeDesc);
    } catch (e) {
      eventsNote = apiErrorNotice(e, 'the events');
    }
    return [
      h('p', {}, h('a', { href: namespace === CLUSTER_SCOPE ? '/ui/workloads' : `/ui/workloads?namespace=${encodeURIComponent(namespace)}`, 'data-nav': '' }, '← Workloads')),
      h('h1', {}, `${w.kind}/${w.name}`, h('span', { class: 'muted' }, scopeText(namespace))),
      h('p', {}, h('button', { type: 'button', class: 'secondary', onclick: paint }, 'Refresh'),
        h('span', { class: 'muted small', 'aria-live': 'polite' }, ` read ${new Date().toLocaleTimeString()}; follows the binding's changes`)),
      h('dl', { class: 'facts wide' },
        h('dt', {}, 'Binding'), h('dd', {}, rb.metadata.name),
        h('dt', {}, 'Policy'), h('dd', {}, w.policy),
        h('dt', {}, 'Placement'), h('dd', {}, w.placement),
        h('dt', {}, 'Replicas'), h('dd', {}, stackedBar(w))),
      h('h2', {}, 'Binding conditions'), conditionTable((rb.status && rb.status.conditions) || []),
      h('h2', {}, 'Per cluster: Work applied, manifest against the template'),
      templateNote, sections.length ? sections : h('p', { class: 'muted' }, 'Not scheduled to any cluster yet.'),
      h('h2', {}, 'Events'), eventsNote, eventsTable(events),
      h('h2', {}, 'Template'),
      template ? h('details', {}, h('summary', {}, `${res.kind} ${res.namespace ? `${res.namespace}/` : ''}${res.name}`),
        h('pre', { tabindex: 0 }, yamlLines(template).join('\n'))) : templateNote,
    ];
  }
  paint();
  const list = bindingPath(namespace, name).replace(/\/[^/]*$/, '');
  const live = new LiveList(`${list}?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`, (l) => {
    const rb = [...l.items.values()][0];
    if (rb && shownRv !== null && rb.metadata.resourceVersion !== shownRv) paint();
  }, 500);
  return () => { stopped = true; live.stop(); };
}

// ---- Scheduling ---------------------------------------------------------------------------

export function renderScheduling(main, query, navigate) {
  const ns = query.get('namespace') || '';
  const counts = h('p', { class: 'counts', 'aria-live': 'polite' });
  const status = h('div');
  const table = h('div');
  const nsInput = h('input', { id: 's-ns', name: 'namespace', value: ns, placeholder: 'all namespaces', autocomplete: 'off' });
  const form = h('form', {
    class: 'filters', role: 'search', 'aria-label': 'Filter scheduling events',
    onsubmit: (e) => {
      e.preventDefault();
      const v = nsInput.value.trim();
      navigate(`/ui/scheduling${v ? `?namespace=${encodeURIComponent(v)}` : ''}`);
    },
  }, h('label', { for: 's-ns' }, 'Namespace'), nsInput, h('button', { type: 'submit' }, 'Apply'));
  fill(main, h('h1', {}, 'Scheduling'),
    h('p', { class: 'muted' }, 'Recent scheduling decisions, failovers and evictions, newest first (from Events); a failed decision says why clusters were filtered out.'),
    form, counts, status, table);
  const path = ns ? `/api/v1/namespaces/${encodeURIComponent(ns)}/events` : '/api/v1/events';
  const live = new LiveList(path, (l) => {
    fill(status, l.error ? apiErrorNotice(l.error, ns ? `events in namespace ${ns}` : 'events in all namespaces',
      l.error.code === 403 && !ns ? 'Enter a namespace you may read above.' : null) : null);
    if (!l.loaded) return;
    const events = [...l.items.values()].filter((e) => SCHEDULING_REASONS.has(e.reason)).sort(byTimeDesc).slice(0, 500);
    counts.textContent = `${events.length} scheduling events`;
    fill(table, eventsTable(events));
  }, 250);
  return () => live.stop();
}

// ---- errors -------------------------------------------------------------------------------

/** What to tell the user about a failed read of `what`. */
export function apiErrorNotice(e, what, hint) {
  if (!(e instanceof ApiError)) return notice('error', `Could not read ${what}.`, String(e));
  if (e.code === 401) return notice('error', 'Your credential was refused (401 Unauthorized).', 'It is missing, expired or invalid: sign in again.');
  if (e.code === 403) {
    const n = notice('error', `Forbidden: you may not read ${what} (403).`, e.message);
    if (hint) n.append(h('p', {}, hint));
    return n;
  }
  if (e.code === 404) return notice('error', `Not found: ${what} (404).`, e.message);
  if (e.code === 0) return notice('warn', `Lost the connection while reading ${what}; retrying.`, e.message);
  return notice('error', `Could not read ${what} (${e.code} ${e.reason}).`, e.message);
}
