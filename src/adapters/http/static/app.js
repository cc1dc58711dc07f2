// The status page: reads /v1/info, /v1/stats, /v1/timeline and /v1/anchors, follows /v1/events,
// shows one subject at #/subject/KEY, keeps the list's tab and filters in ?status=&witness=&limit=.
// Plain script, no build. Text from the API is only ever set as textContent. Times are shown in
// UTC, with the zone.
'use strict';

(() => {
  const TOKEN_KEY = 'aer1-anchor-token';
  const MAX_EVENTS = 30;
  const SVG = 'http://www.w3.org/2000/svg';
  const $ = (sel, root = document) => root.querySelector(sel);

  // A token may arrive in the fragment (#token=...), which browsers never send to the server.
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get('token')) {
    sessionStorage.setItem(TOKEN_KEY, hash.get('token'));
    history.replaceState(null, '', location.pathname + location.search);
  }
  const token = () => sessionStorage.getItem(TOKEN_KEY);

  class Unauthorized extends Error {}

  async function api(path) {
    const headers = { Accept: 'application/json' };
    if (token()) headers.Authorization = `Bearer ${token()}`;
    const res = await fetch(path, { headers, cache: 'no-store' });
    if (res.status === 401) throw new Unauthorized('token required');
    const body = await res.json().catch(() => null);
    if (!res.ok) {
      const err = new Error(body?.error?.message ?? `HTTP ${res.status}`);
      err.status = res.status;
      throw err;
    }
    return body;
  }

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null) continue;
      if (k === 'class') node.className = v;
      else if (k.startsWith('data-')) node.setAttribute(k, v);
      else node[k] = v;
    }
    for (const c of children) if (c !== null && c !== undefined && c !== false) node.append(c instanceof Node ? c : String(c));
    return node;
  }

  function svg(tag, attrs = {}, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) node.setAttribute(k, String(v));
    for (const c of children) if (c) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return node;
  }

  const badge = (status) => el('span', { class: `badge ${status}`, 'data-status': status }, status);
  const subjectHref = (key) => `#/subject/${encodeURIComponent(key)}`;
  const keyLink = (key) => el('a', { href: subjectHref(key), class: 'mono', 'data-key': key }, key);

  function age(seconds) {
    if (seconds === null || seconds === undefined) return '–';
    const s = Math.round(seconds);
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
    if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
    return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
  }

  const pad = (n) => String(n).padStart(2, '0');
  /** `2026-01-31 12:34:56 UTC` */
  function when(iso) {
    if (!iso) return '–';
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return iso;
    return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`;
  }
  /** `12:34:56 UTC` */
  const clock = (d) => `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`;
  const hhmm = (d) => `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
  /** `<time>` showing UTC, with the age since in its title. */
  function timeEl(iso) {
    if (!iso) return '–';
    const secs = (Date.now() - new Date(iso).getTime()) / 1000;
    return el('time', { dateTime: iso, title: Number.isFinite(secs) ? `${age(Math.max(0, secs))} ago` : '' }, when(iso));
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return '–';
    if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
    if (seconds < 3600) return `${(seconds / 60).toFixed(1)} min`;
    return `${(seconds / 3600).toFixed(1)} h`;
  }

  function showError(message) {
    const box = $('#error');
    box.textContent = message ?? '';
    box.hidden = !message;
  }

  function needToken() {
    $('#auth').hidden = false;
    setLive('offline');
  }

  async function guarded(what, fn) {
    try {
      await fn();
      return true;
    } catch (err) {
      if (err instanceof Unauthorized) {
        needToken();
        return false;
      }
      showError(`Could not read ${what}: ${err.message}`);
      return false;
    }
  }

  // ---- identity

  let info = null;
  function renderInfo(i) {
    info = i;
    const parts = [el('span', {}, `v${i.version}`)];
    if (i.nostr) {
      const npub = i.nostr.npub;
      parts.push(el('span', {}, 'signer ', npub ? el('code', { title: `${npub}\n${i.nostr.pubkey}`, 'data-npub': npub }, `${npub.slice(0, 14)}…${npub.slice(-6)}`) : 'unknown'));
      parts.push(el('span', {}, `nostr ${i.nostr.mode} mode, quorum ${i.nostr.quorum} of ${i.nostr.relays.length}`));
    }
    if (i.ots) parts.push(el('span', { 'data-network': i.ots.network }, `ots ${i.ots.network}, ${i.ots.minCalendars} of ${i.ots.calendars.length} calendar${i.ots.calendars.length === 1 ? '' : 's'}`));
    if (i.readsRequireToken) parts.push(el('span', {}, 'reads need a token'));
    $('#identity').replaceChildren(...parts.flatMap((p, n) => (n ? [' · ', p] : [p])));
    $('#relay-unit').textContent = i.nostr?.mode === 'batch' ? 'one per batch in batch mode' : i.nostr?.mode === 'auto' ? 'one per subject within the rate budget, one per batch beyond, in auto mode' : 'one per subject in envelope mode';
    const sel = $('#ttc-series');
    const want = ['subject', ...i.witnesses];
    if (sel.options.length !== want.length) sel.replaceChildren(...want.map((w) => el('option', { value: w }, w === 'subject' ? 'subject (all witnesses)' : w)));
  }

  // ---- stats

  function renderStats(stats) {
    const by = stats.subjects.byStatus;
    for (const node of document.querySelectorAll('[data-count]')) {
      const k = node.getAttribute('data-count');
      node.textContent = String(k === 'total' ? stats.subjects.total : (by[k] ?? 0));
    }
    const o = stats.oldestPending;
    $('#oldest').replaceChildren(o ? el('span', {}, keyLink(o.key), ` since ${when(o.since)} (${age(o.ageSeconds)})`) : 'none');
    $('#witnesses tbody').replaceChildren(
      ...Object.entries(stats.witnesses).map(([name, w]) =>
        el('tr', { 'data-witness': name },
          el('td', {}, el('strong', {}, name)),
          ...['pending', 'partial', 'confirmed', 'failed'].map((s) => el('td', { 'data-witness-count': s }, String(w.counts[s] ?? 0))),
          el('td', {}, w.oldestPending ? age(w.oldestPending.ageSeconds) : '–'),
          el('td', {}, timeEl(w.lastConfirmedAt)))),
    );
    for (const [k, v] of Object.entries(stats.queue)) {
      const cell = document.querySelector(`[data-queue="${k}"]`);
      if (cell) cell.textContent = String(v);
    }
    renderEndpoints(stats.health ?? []);
    for (const tab of document.querySelectorAll('#status-tabs [data-status]')) {
      const st = tab.getAttribute('data-status');
      const n = st ? (by[st] ?? 0) : stats.subjects.total;
      tab.replaceChildren(st || 'all', el('span', { class: 'n' }, String(n)));
    }
    // until the operator picks a tab: open on the first of the statuses that need attention that has subjects
    if (!list.picked) {
      const first = ['pending', 'partial', 'failed', 'rejected'].find((st) => (by[st] ?? 0) > 0);
      if (first && first !== list.status) setList({ status: first });
    }
    $('#updated').textContent = `updated ${clock(new Date())}`;
  }

  function errorRate(r) {
    if (!r || r.attempts === 0) return el('span', { class: 'muted' }, 'no attempts');
    const pct = Math.round((100 * r.failures) / r.attempts);
    // rate-limited answers are back-pressure, not errors: shown beside the rate, not in it
    const limited = r.throttled ? `; ${r.throttled} rate-limited` : '';
    return el('span', { class: pct >= 50 ? 'rate bad' : pct > 0 ? 'rate warn' : 'rate' }, `${pct}%`, el('span', { class: 'muted' }, ` (${r.failures} of ${r.attempts}${limited})`));
  }

  // relay upkeep: how far back the relay still holds anchor events, and what the round found
  function upkeepCell(u) {
    if (!u) return el('td', { 'data-upkeep': '' }, '–');
    const round = u.lastRound ?? u;
    const found = `${round.checked} checked, ${round.missing} lost and sent again${round.unknown ? `, ${round.unknown} unknown` : ''}${u.lastRound ? ' (last round)' : ' (this round)'}; ${u.republished} taken again in all`;
    return el('td', { 'data-upkeep': u.oldestHeldAt ?? '' },
      u.oldestHeldAt ? el('span', {}, timeEl(u.oldestHeldAt), el('span', { class: 'muted' }, ` (${age(u.oldestHeldAgeSeconds)})`)) : el('span', { class: 'muted' }, 'not checked yet'),
      el('div', { class: 'muted small' }, found),
      u.error ? el('div', { class: 'muted small' }, `could not ask: ${u.error}`) : null);
  }

  function renderEndpoints(health) {
    $('#endpoints tbody').replaceChildren(...health.map((h) =>
      el('tr', { 'data-endpoint': h.url, 'data-kind': h.kind, 'data-state': h.state },
        el('td', {}, el('span', { class: 'muted' }, `${h.kind} `), el('span', { class: 'mono' }, h.url)),
        el('td', {}, badge(h.state), h.reason ? el('div', { class: 'muted small' }, h.reason) : null,
          h.consecutiveFailures > 0 ? el('div', { class: 'muted small' }, `${h.consecutiveFailures} failed in a row`) : null,
          h.state === 'throttled' ? el('div', { class: 'muted small' }, 'asks us to slow down (rate-limited); publishes wait and are retried') : null),
        el('td', {}, timeEl(h.lastSuccessAt)),
        el('td', { class: 'error-cell' }, h.lastError ? el('span', {}, el('div', { class: 'small muted' }, when(h.lastError.at)), h.lastError.message) : '–'),
        el('td', {}, errorRate(h.recent)),
        el('td', { 'data-waiting': h.waiting ?? '' }, h.waiting === null || h.waiting === undefined ? '–' : String(h.waiting)),
        upkeepCell(h.upkeep))));
    const failing = health.filter((h) => h.state === 'failing');
    const box = $('#failing');
    box.hidden = failing.length === 0;
    box.replaceChildren(...failing.map((h) => el('div', {}, el('strong', {}, `${h.kind} ${h.url} is failing`),
      ` — ${h.consecutiveFailures} attempts in a row failed${h.lastError ? `; last: ${h.lastError.message}` : ''}${h.waiting ? `; ${h.waiting} waiting on it` : ''}`)));
  }

  const refreshInfo = () => guarded('the daemon info', async () => renderInfo(await api('v1/info')));
  async function refreshStats() {
    if (await guarded('the stats', async () => renderStats(await api('v1/stats')))) showError(null);
  }

  // ---- charts (inline SVG)

  /**
   * A small chart over the minute buckets: `bars` side by side per minute and `lines` across
   * (null values break a line). `fmt` formats the y axis.
   */
  function chart(buckets, { bars = [], lines = [], dots = [], fmt = String, label }) {
    const W = 560;
    const H = 170;
    const L = 44;
    const R = 8;
    const T = 10;
    const B = 22;
    const n = buckets.length;
    const all = [...bars, ...lines, ...dots].flatMap((s) => s.values).filter((v) => v !== null && v !== undefined);
    const max = niceMax(Math.max(0, ...all));
    const x = (i) => L + ((W - L - R) * i) / n;
    const y = (v) => T + (H - T - B) * (1 - v / max);
    const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label, class: 'spark' });
    for (const f of [0, 0.5, 1]) {
      root.append(svg('line', { x1: L, x2: W - R, y1: y(max * f), y2: y(max * f), class: 'grid' }));
      root.append(svg('text', { x: L - 6, y: y(max * f) + 4, class: 'axis', 'text-anchor': 'end' }, fmt(max * f)));
    }
    const bw = (W - L - R) / n;
    bars.forEach((s, k) => {
      const w = Math.max(1, (bw - 1) / bars.length);
      s.values.forEach((v, i) => {
        if (!v) return;
        root.append(svg('rect', { x: x(i) + k * w, y: y(v), width: Math.max(1, w - 0.5), height: y(0) - y(v), class: s.cls },
          svg('title', {}, `${hhmm(new Date(buckets[i].start))} UTC: ${fmt(v)} ${s.name}`)));
      });
    });
    for (const s of lines) {
      let d = '';
      s.values.forEach((v, i) => {
        if (v === null || v === undefined) return;
        d += `${d && s.values[i - 1] !== null && s.values[i - 1] !== undefined ? 'L' : 'M'}${(x(i) + bw / 2).toFixed(1)},${y(v).toFixed(1)}`;
      });
      if (d) root.append(svg('path', { d, class: s.cls }));
      s.values.forEach((v, i) => {
        if (v === null || v === undefined) return;
        root.append(svg('circle', { cx: x(i) + bw / 2, cy: y(v), r: 2.5, class: s.cls }, svg('title', {}, `${hhmm(new Date(buckets[i].start))} UTC: ${s.name} ${fmt(v)}`)));
      });
    }
    for (const s of dots) {
      s.values.forEach((v, i) => {
        if (v === null || v === undefined) return;
        root.append(svg('rect', { x: x(i) + bw / 2 - 3, y: y(v) - 1, width: 6, height: 2.5, class: s.cls }, svg('title', {}, `${hhmm(new Date(buckets[i].start))} UTC: ${s.name} ${fmt(v)}`)));
      });
    }
    root.append(svg('line', { x1: L, x2: W - R, y1: y(0), y2: y(0), class: 'base' }));
    for (const i of [0, Math.floor(n / 2), n - 1]) {
      if (!buckets[i]) continue;
      root.append(svg('text', { x: x(i) + bw / 2, y: H - 6, class: 'axis', 'text-anchor': i === 0 ? 'start' : i === n - 1 ? 'end' : 'middle' }, `${hhmm(new Date(buckets[i].start))}${i === n - 1 ? ' UTC' : ''}`));
    }
    return root;
  }

  function niceMax(v) {
    if (v <= 0) return 1;
    const p = 10 ** Math.floor(Math.log10(v));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  let timeline = null;
  function renderTimeline(t) {
    timeline = t;
    const b = t.buckets;
    const received = b.map((x) => x.received);
    const confirmed = b.map((x) => x.confirmed.subject ?? 0);
    const rejected = b.map((x) => x.rejected);
    const count = (v) => (Number.isInteger(v) ? String(v) : v.toFixed(1));
    $('#chart-throughput').replaceChildren(chart(b, {
      bars: [{ name: 'received', cls: 'b-received', values: received }, { name: 'confirmed', cls: 'b-confirmed', values: confirmed }, { name: 'rejected', cls: 'b-rejected', values: rejected }],
      fmt: count,
      label: 'subjects received, confirmed and rejected per minute over the last hour',
    }));
    const sum = (a) => a.reduce((p, q) => p + q, 0);
    $('#throughput-sum').textContent = `· last hour: ${sum(received)} received, ${sum(confirmed)} confirmed, ${sum(rejected)} rejected`;
    renderTtc();
  }

  function renderTtc() {
    if (!timeline) return;
    const series = $('#ttc-series').value || 'subject';
    const b = timeline.buckets;
    const ttc = b.map((x) => x.timeToConfirm[series] ?? null);
    $('#chart-ttc').replaceChildren(chart(b, {
      lines: [{ name: 'mean', cls: 'l-mean', values: ttc.map((t) => (t ? t.meanSeconds : null)) }],
      dots: [{ name: 'longest', cls: 'd-max', values: ttc.map((t) => (t ? t.maxSeconds : null)) }],
      fmt: (v) => duration(v),
      label: `time to confirm (${series}) per minute over the last hour`,
    }));
    const done = ttc.filter(Boolean);
    const n = done.reduce((a, t) => a + t.count, 0);
    $('#ttc-sum').textContent = n
      ? `· ${n} confirmation${n === 1 ? '' : 's'}: mean ${duration(done.reduce((a, t) => a + t.meanSeconds * t.count, 0) / n)}, longest ${duration(Math.max(...done.map((t) => t.maxSeconds)))}`
      : '· no confirmations in the last hour';
  }

  const refreshTimeline = () => guarded('the timeline', async () => renderTimeline(await api('v1/timeline?minutes=60')));

  // ---- subjects by status, a page at a time

  const list = { status: 'pending', witness: '', limit: 20, cursors: [null], picked: false };

  function listQuery() {
    const q = new URLSearchParams();
    if (list.status) q.set('status', list.status);
    if (list.witness) q.set('witness', list.witness);
    q.set('limit', String(list.limit));
    const cursor = list.cursors[list.cursors.length - 1];
    if (cursor) q.set('cursor', cursor);
    return `v1/anchors?${q}`;
  }

  function renderList(page) {
    const rows = page.items.map((item) =>
      el('tr', { 'data-key': item.key, 'data-status': item.status },
        el('td', { class: 'key' }, keyLink(item.key)),
        el('td', { class: 'kind' }, item.kind ?? '–'),
        el('td', {}, badge(item.status)),
        el('td', { class: 'wits' }, ...Object.entries(item.witnesses ?? {}).map(([w, st]) => el('span', { class: 'wit', 'data-witness': w }, `${w} `, badge(st)))),
        el('td', {}, timeEl(item.createdAt)),
        el('td', {}, timeEl(item.updatedAt)),
        el('td', { class: 'reason' }, item.reason ?? '')));
    $('#list tbody').replaceChildren(...rows);
    // the reason column only when some subject on the page has one (rejected, failed)
    $('#list').classList.toggle('no-reason', !page.items.some((item) => item.reason));
    $('#list-empty').hidden = rows.length > 0;
    const what = [list.status, 'subjects'].filter(Boolean).join(' ');
    $('#list-empty').textContent = list.cursors.length > 1 ? 'No more.' : `No ${what}${list.witness ? ` (${list.witness})` : ''}.`;
    list.next = page.next;
    $('#list-next').disabled = !page.next;
    $('#list-prev').disabled = list.cursors.length <= 1;
    $('#list-page').textContent = `page ${list.cursors.length}`;
    for (const tab of document.querySelectorAll('#status-tabs [data-status]')) {
      const s = tab.getAttribute('data-status');
      tab.setAttribute('aria-selected', String(s === list.status));
      // a witness's status has no "rejected" (that is the subject's), and its list needs a status
      tab.disabled = Boolean(list.witness) && (s === 'rejected' || s === '');
    }
  }

  // Answers can arrive out of order (a tab clicked while the previous list is on its way):
  // only the answer to the latest request is drawn.
  let listRequest = 0;
  const refreshList = () => guarded('the subject list', async () => {
    const mine = ++listRequest;
    const page = await api(listQuery());
    if (mine === listRequest) renderList(page);
  });

  function setList(change) {
    Object.assign(list, change, { cursors: [null] });
    if (list.witness && (list.status === 'rejected' || list.status === '')) list.status = 'pending';
    showListInAddress();
    void refreshList();
  }

  // The tab and filters an operator picked are in the address (?status=&witness=&limit=), so a
  // copied link opens the same list; values the page does not offer are ignored.
  const STATUS_TABS = [...document.querySelectorAll('#status-tabs [data-status]')].map((t) => t.getAttribute('data-status'));
  const offered = (select, value) => [...$(select).options].some((o) => o.value === value);

  function listFromAddress() {
    const q = new URLSearchParams(location.search);
    const change = {};
    const status = q.get('status') === 'all' ? '' : q.get('status');
    if (status !== null && STATUS_TABS.includes(status)) change.status = status;
    if (q.get('witness') !== null && offered('#list-witness', q.get('witness'))) change.witness = q.get('witness');
    if (q.get('limit') !== null && offered('#list-limit', q.get('limit'))) change.limit = Number(q.get('limit'));
    if (Object.keys(change).length > 0) change.picked = true;
    return change;
  }

  function showListInAddress() {
    $('#list-witness').value = list.witness;
    $('#list-limit').value = String(list.limit);
    const q = new URLSearchParams();
    if (list.picked) {
      q.set('status', list.status || 'all');
      if (list.witness) q.set('witness', list.witness);
      if (list.limit !== 20) q.set('limit', String(list.limit));
    }
    const search = q.toString() ? `?${q}` : '';
    if (search !== location.search) history.replaceState(null, '', `${location.pathname}${search}${location.hash}`);
  }

  // ---- latest confirmations

  function renderLatest(page) {
    const rows = page.items.map((item) =>
      el('tr', { 'data-key': item.key },
        el('td', { class: 'key' }, keyLink(item.key)),
        el('td', { class: 'kind' }, item.kind ?? '–'),
        el('td', {}, timeEl(item.updatedAt))));
    $('#latest tbody').replaceChildren(...rows);
    $('#latest-empty').hidden = rows.length > 0;
  }

  const refreshLatest = () => guarded('the latest confirmations', async () => renderLatest(await api('v1/anchors?status=confirmed&limit=10')));

  // Many changes arrive in bursts: coalesce the refreshes they cause.
  function debounce(fn, ms) {
    let timer = null;
    return () => {
      if (timer) return;
      timer = setTimeout(() => {
        timer = null;
        fn();
      }, ms);
    };
  }
  const soonStats = debounce(refreshStats, 300);
  const soonLatest = debounce(refreshLatest, 300);
  const soonList = debounce(refreshList, 500);
  const soonTimeline = debounce(refreshTimeline, 3000);

  // ---- one subject (#/subject/KEY)

  let lookedUp = null;

  /** Members of a relay's or calendar's entry beyond the usual ones (error details), as text. */
  function extraDetails(entry, known) {
    const out = [];
    for (const [k, v] of Object.entries(entry)) {
      if (known.includes(k) || v === null || v === undefined || v === '') continue;
      if (Array.isArray(v)) {
        for (const item of v) out.push(el('div', { class: 'small detail', 'data-detail': k }, `${k}: ${describeValue(item)}`));
      } else out.push(el('div', { class: 'small detail', 'data-detail': k }, `${k}: ${describeValue(v)}`));
    }
    return out;
  }

  function describeValue(v) {
    if (v === null || typeof v !== 'object') return String(v);
    const at = v.at ? `${when(v.at)} ` : '';
    const msg = v.message ?? v.error ?? v.detail;
    if (msg !== undefined) return `${at}${v.code ? `${v.code}: ` : ''}${msg}`;
    return JSON.stringify(v);
  }

  function renderSubject(a) {
    const box = $('#lookup-result');
    const parts = [
      el('h3', {}, el('span', { class: 'mono', 'data-key': a.key }, a.key), badge(a.status)),
      el('dl', {},
        el('dt', {}, 'kind'), el('dd', {}, a.kind ?? '–'),
        el('dt', {}, 'digest'), el('dd', { class: 'mono' }, a.digest ?? '–'),
        el('dt', {}, 'accepted'), el('dd', {}, timeEl(a.createdAt)),
        el('dt', {}, 'updated'), el('dd', {}, timeEl(a.updatedAt)),
        a.reason ? el('dt', {}, 'reason') : null, a.reason ? el('dd', { class: 'reason' }, a.reason) : null,
        el('dt', {}, 'link'), el('dd', {}, el('a', { href: subjectHref(a.key), class: 'mono small' }, `${location.origin}${location.pathname}${subjectHref(a.key)}`))),
    ];
    const n = a.witnesses?.nostr;
    if (n) {
      parts.push(el('h4', { 'data-witness': 'nostr' }, 'Nostr', badge(n.status), n.confirmedAt ? el('span', { class: 'muted small' }, `confirmed ${when(n.confirmedAt)}`) : null));
      parts.push(el('dl', {},
        el('dt', {}, 'mode'), el('dd', { 'data-mode': n.mode ?? 'undecided' }, n.mode === 'batch' ? 'batch event' : n.mode === 'envelope' ? 'own event' : 'not decided yet'),
        el('dt', {}, 'event'), el('dd', { class: 'mono' }, n.eventId ?? '–'),
        n.batch ? el('dt', {}, 'batch') : null, n.batch ? el('dd', {}, `#${n.batch.id}, leaf ${n.batch.index} of ${n.batch.size ?? '?'}`) : null));
      parts.push(el('table', { class: 'grid' },
        el('thead', {}, el('tr', {}, el('th', {}, 'relay'), el('th', {}, 'status'), el('th', {}, 'message'), el('th', {}, 'at'))),
        el('tbody', {}, ...n.relays.map((r) => el('tr', { 'data-relay': r.url },
          el('td', { class: 'mono' }, r.url),
          el('td', {}, badge(r.status), r.attempts ? el('div', { class: 'muted small' }, `${r.attempts} attempt${r.attempts === 1 ? '' : 's'}`) : null),
          el('td', {}, r.message || '', ...extraDetails(r, ['url', 'status', 'message', 'at', 'attempts', 'prefix', 'final'])),
          el('td', {}, timeEl(r.at)))))));
    }
    const o = a.witnesses?.ots;
    if (o) {
      parts.push(el('h4', { 'data-witness': 'ots' }, 'OpenTimestamps', badge(o.status), o.confirmedAt ? el('span', { class: 'muted small' }, `confirmed ${when(o.confirmedAt)}`) : null));
      parts.push(el('dl', {},
        el('dt', {}, 'batch'), el('dd', {}, o.batch ? `#${o.batch.id}, leaf ${o.batch.index} of ${o.batch.size ?? '?'}${o.batch.submitted === false ? ' (not yet submitted)' : ''}` : 'not yet batched'),
        el('dt', {}, 'bitcoin'), el('dd', {}, o.bitcoin ? `block ${o.bitcoin.height} (${o.bitcoin.block_hash.slice(0, 16)}…), ${when(new Date(o.bitcoin.time * 1000).toISOString())}` : '–')));
      parts.push(el('table', { class: 'grid' },
        el('thead', {}, el('tr', {}, el('th', {}, 'calendar'), el('th', {}, 'status'), el('th', {}, 'message'), el('th', {}, 'at'))),
        el('tbody', {}, ...o.calendars.map((c) => el('tr', { 'data-calendar': c.url },
          el('td', { class: 'mono' }, c.url),
          el('td', {}, badge(c.status), c.polls ? el('div', { class: 'muted small' }, `${c.polls} poll${c.polls === 1 ? '' : 's'}`) : null),
          el('td', {}, c.message || '', ...extraDetails(c, ['url', 'status', 'message', 'at', 'polls'])),
          el('td', {}, timeEl(c.at)))))));
    }
    if (a.history?.length) {
      parts.push(el('h4', {}, 'History'));
      parts.push(el('ol', { class: 'history' }, ...a.history.map((h) =>
        el('li', {}, `${when(h.at)} · ${h.event}${h.witness ? ` ${h.witness}` : ''}${h.from ? ` ${h.from} → ${h.to}` : ''}${h.status ? ` (overall ${h.status})` : ''}${h.detail ? ` · ${h.detail}` : ''}${h.reason ? ` · ${h.reason}` : ''}`))));
    }
    // a rejected subject has no proof (GET .../proof answers 404 no_proof)
    if (a.status !== 'rejected' && a.digest) {
      const path = `v1/anchors/${encodeURIComponent(a.key)}/proof`;
      parts.push(el('p', { class: 'proof-links' },
        el('a', { href: path, download: `${a.key}.proof.json`, class: 'proof-link', onclick: (e) => downloadWithToken(e, path, `${a.key}.proof.json`) }, `proof (aer1-anchor-proof-v1${a.status === 'confirmed' ? '' : `, ${a.status} so far`})`),
        ' · ', el('a', { href: verifyHref(a.key), class: 'verify-link' }, 'verify it in the browser')));
    } else {
      parts.push(el('p', { class: 'muted no-proof' }, a.status === 'rejected' ? 'Rejected: no proof exists for this subject.' : 'No proof yet.'));
    }
    box.replaceChildren(...parts);
    box.hidden = false;
  }

  /** /verify loads the subject's proof from this daemon and fills in its signer and network (the trust stays the reader's to change). */
  function verifyHref(key) {
    const q = new URLSearchParams({ key });
    if (info?.nostr?.pubkey) q.set('pubkey', info.nostr.pubkey);
    if (info?.ots?.network) q.set('network', info.ots.network);
    return `verify?${q}`;
  }

  /** With a token, the proof is fetched with it (never put in a URL) and saved from memory. */
  async function downloadWithToken(e, path, name) {
    if (!token()) return;
    e.preventDefault();
    try {
      const body = await api(path);
      const url = URL.createObjectURL(new Blob([`${JSON.stringify(body, null, 2)}\n`], { type: 'application/json' }));
      const a = el('a', { href: url, download: name });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      if (err instanceof Unauthorized) return needToken();
      showError(`Could not read the proof: ${err.message}`);
    }
  }

  async function lookup(key) {
    key = key.trim();
    if (!key) return;
    lookedUp = key;
    $('#lookup-key').value = key;
    const box = $('#lookup-result');
    $('#subject').hidden = false;
    try {
      renderSubject(await api(`v1/anchors/${encodeURIComponent(key)}`));
    } catch (err) {
      if (err instanceof Unauthorized) return needToken();
      box.replaceChildren(el('p', { class: 'notfound' }, err.status === 404 ? `No subject with key ${key}.` : `Could not look it up: ${err.message}`));
      box.hidden = false;
    }
  }

  function route() {
    const m = /^#\/subject\/(.+)$/.exec(location.hash);
    if (m) {
      let key;
      try {
        key = decodeURIComponent(m[1]);
      } catch {
        key = m[1];
      }
      void lookup(key).then(() => window.scrollTo({ top: 0 }));
    } else {
      lookedUp = null;
      $('#subject').hidden = true;
    }
  }

  // ---- live changes

  function describe(ev) {
    if (ev.type === 'accepted') return 'accepted';
    if (ev.type === 'state') return `${ev.witness} ${ev.from} → ${ev.to}`;
    return ev.type;
  }

  function addEvent(ev) {
    const list = $('#events');
    const at = ev.at ? clock(new Date(ev.at)) : '';
    list.prepend(el('li', { 'data-key': ev.key, 'data-id': ev.id },
      el('span', { class: 'when' }, at),
      keyLink(ev.key),
      el('span', {}, describe(ev)),
      badge(ev.status)));
    while (list.children.length > MAX_EVENTS) list.lastElementChild.remove();
    $('#events-empty').hidden = true;
  }

  function setLive(state) {
    const live = $('#live');
    live.dataset.state = state;
    $('#live-text').textContent = state;
  }

  // one stream for every shard (redis.shards): /v1/events merges them, and EventSource resumes with the merged id
  let source = null;
  function connect() {
    if (source) source.close();
    source = follow(new EventSource(token() ? `v1/events?access_token=${encodeURIComponent(token())}` : 'v1/events'));
  }

  function follow(source) {
    source.onopen = () => {
      setLive('live');
      // changes may have happened while disconnected
      soonStats();
      soonLatest();
      soonList();
    };
    source.onerror = () => setLive(source.readyState === EventSource.CLOSED ? 'offline' : 'reconnecting');
    source.onmessage = (msg) => {
      let ev;
      try {
        ev = JSON.parse(msg.data);
      } catch {
        return;
      }
      addEvent(ev);
      soonStats();
      soonList();
      soonTimeline();
      if (ev.status === 'confirmed' || ev.previous === 'confirmed') soonLatest();
      if (lookedUp !== null && ev.key === lookedUp) lookup(lookedUp);
    };
    return source;
  }

  // ---- start

  $('#lookup-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const key = $('#lookup-key').value.trim();
    if (!key) return;
    if (location.hash === subjectHref(key)) void lookup(key);
    else location.hash = subjectHref(key);
  });
  $('#auth-form').addEventListener('submit', (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('#auth-token').value.trim());
    $('#auth-token').value = '';
    $('#auth').hidden = true;
    start();
  });
  for (const tab of document.querySelectorAll('#status-tabs [data-status]')) tab.addEventListener('click', () => setList({ status: tab.getAttribute('data-status'), picked: true }));
  $('#list-witness').addEventListener('change', (e) => setList({ witness: e.target.value, picked: true }));
  $('#list-limit').addEventListener('change', (e) => setList({ limit: Number(e.target.value), picked: true }));
  $('#list-next').addEventListener('click', () => {
    if (!list.next) return;
    list.cursors.push(list.next);
    void refreshList();
  });
  $('#list-prev').addEventListener('click', () => {
    if (list.cursors.length <= 1) return;
    list.cursors.pop();
    void refreshList();
  });
  $('#ttc-series').addEventListener('change', renderTtc);
  window.addEventListener('hashchange', route);

  Object.assign(list, listFromAddress());
  showListInAddress();

  async function start() {
    await Promise.all([refreshInfo(), refreshStats(), refreshLatest(), refreshList(), refreshTimeline()]);
    route();
    if ($('#auth').hidden) connect();
  }

  // ages and the last hour move on even when nothing changes
  setInterval(refreshStats, 30_000);
  setInterval(refreshTimeline, 30_000);
  start();
})();
