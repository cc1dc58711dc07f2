// The status page: reads /v1/stats and /v1/anchors, follows /v1/events, looks up one key.
// Plain script, no build. Text from the API is only ever set as textContent.
'use strict';

(() => {
  const TOKEN_KEY = 'aer1-anchor-token';
  const MAX_EVENTS = 30;
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
    for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
    return node;
  }

  const badge = (status) => el('span', { class: `badge ${status}`, 'data-status': status }, status === 'rejected' ? 'refused' : status);

  function age(seconds) {
    if (seconds === null || seconds === undefined) return '–';
    const s = Math.round(seconds);
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
    if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
    return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
  }

  function when(iso) {
    if (!iso) return '–';
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return iso;
    return d.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
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

  // ---- stats and latest confirmations

  function renderStats(stats) {
    const by = stats.subjects.byStatus;
    for (const node of document.querySelectorAll('[data-count]')) {
      const k = node.getAttribute('data-count');
      node.textContent = String(k === 'total' ? stats.subjects.total : (by[k] ?? 0));
    }
    const o = stats.oldestPending;
    const oldest = $('#oldest');
    oldest.replaceChildren(o ? el('span', {}, el('a', { href: '#', class: 'mono', 'data-key': o.key, onclick: (e) => { e.preventDefault(); lookup(o.key); } }, o.key), ` since ${when(o.since)} (${age(o.ageSeconds)})`) : 'none');
    const body = $('#witnesses tbody');
    body.replaceChildren(
      ...Object.entries(stats.witnesses).map(([name, w]) =>
        el('tr', { 'data-witness': name },
          el('td', {}, el('strong', {}, name)),
          ...['pending', 'partial', 'confirmed', 'failed'].map((s) => el('td', { 'data-witness-count': s }, String(w.counts[s] ?? 0))),
          el('td', {}, w.oldestPending ? age(w.oldestPending.ageSeconds) : '–'),
          el('td', {}, when(w.lastConfirmedAt)))),
    );
    for (const [k, v] of Object.entries(stats.queue)) {
      const cell = document.querySelector(`[data-queue="${k}"]`);
      if (cell) cell.textContent = String(v);
    }
    $('#updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
  }

  function renderLatest(page) {
    const rows = page.items.map((item) =>
      el('tr', { 'data-key': item.key },
        el('td', { class: 'key mono' }, el('a', { href: '#', onclick: (e) => { e.preventDefault(); lookup(item.key); } }, item.key)),
        el('td', {}, item.kind ?? '–'),
        el('td', {}, when(item.updatedAt))));
    $('#latest tbody').replaceChildren(...rows);
    $('#latest-empty').hidden = rows.length > 0;
  }

  async function refreshStats() {
    try {
      renderStats(await api('v1/stats'));
      showError(null);
    } catch (err) {
      if (err instanceof Unauthorized) return needToken();
      showError(`Could not read the stats: ${err.message}`);
    }
  }

  async function refreshLatest() {
    try {
      renderLatest(await api('v1/anchors?status=confirmed&limit=10'));
    } catch (err) {
      if (err instanceof Unauthorized) return needToken();
      showError(`Could not read the latest confirmations: ${err.message}`);
    }
  }

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

  // ---- one subject

  let lookedUp = null;

  function renderSubject(a) {
    const box = $('#lookup-result');
    const parts = [
      el('h3', {}, el('span', { class: 'mono', 'data-key': a.key }, a.key), badge(a.status)),
      el('dl', {},
        el('dt', {}, 'kind'), el('dd', {}, a.kind ?? '–'),
        el('dt', {}, 'digest'), el('dd', { class: 'mono' }, a.digest ?? '–'),
        el('dt', {}, 'accepted'), el('dd', {}, when(a.createdAt)),
        el('dt', {}, 'updated'), el('dd', {}, when(a.updatedAt)),
        a.reason ? el('dt', {}, 'reason') : null, a.reason ? el('dd', {}, a.reason) : null),
    ];
    const n = a.witnesses.nostr;
    if (n) {
      parts.push(el('h4', { 'data-witness': 'nostr' }, 'Nostr', badge(n.status)));
      parts.push(el('dl', {},
        el('dt', {}, 'mode'), el('dd', { 'data-mode': n.mode ?? 'undecided' }, n.mode === 'batch' ? 'batch event' : n.mode === 'envelope' ? 'own event' : 'not decided yet'),
        el('dt', {}, 'event'), el('dd', { class: 'mono' }, n.eventId ?? '–'),
        n.batch ? el('dt', {}, 'batch') : null, n.batch ? el('dd', {}, `#${n.batch.id}, leaf ${n.batch.index} of ${n.batch.size ?? '?'}`) : null));
      parts.push(el('table', { class: 'grid' },
        el('thead', {}, el('tr', {}, el('th', {}, 'relay'), el('th', {}, 'status'), el('th', {}, 'message'), el('th', {}, 'at'))),
        el('tbody', {}, ...n.relays.map((r) => el('tr', { 'data-relay': r.url }, el('td', { class: 'mono' }, r.url), el('td', {}, badge(r.status)), el('td', {}, r.message || ''), el('td', {}, when(r.at)))))));
    }
    const o = a.witnesses.ots;
    if (o) {
      parts.push(el('h4', { 'data-witness': 'ots' }, 'OpenTimestamps', badge(o.status)));
      parts.push(el('dl', {},
        el('dt', {}, 'batch'), el('dd', {}, o.batch ? `#${o.batch.id}, leaf ${o.batch.index} of ${o.batch.size ?? '?'}` : 'not yet batched'),
        el('dt', {}, 'bitcoin'), el('dd', {}, o.bitcoin ? `block ${o.bitcoin.height} (${o.bitcoin.block_hash.slice(0, 16)}…), ${when(new Date(o.bitcoin.time * 1000).toISOString())}` : '–')));
      parts.push(el('table', { class: 'grid' },
        el('thead', {}, el('tr', {}, el('th', {}, 'calendar'), el('th', {}, 'status'), el('th', {}, 'message'), el('th', {}, 'at'))),
        el('tbody', {}, ...o.calendars.map((c) => el('tr', { 'data-calendar': c.url }, el('td', { class: 'mono' }, c.url), el('td', {}, badge(c.status)), el('td', {}, c.message || ''), el('td', {}, when(c.at)))))));
    }
    if (a.history?.length) {
      parts.push(el('h4', {}, 'History'));
      parts.push(el('ol', { class: 'history' }, ...a.history.map((h) =>
        el('li', {}, `${when(h.at)} · ${h.event}${h.witness ? ` ${h.witness}` : ''}${h.from ? ` ${h.from} → ${h.to}` : ''}${h.status ? ` (overall ${h.status})` : ''}${h.detail ? ` · ${h.detail}` : ''}${h.reason ? ` · ${h.reason}` : ''}`))));
    }
    parts.push(el('p', {}, el('a', { href: `v1/anchors/${encodeURIComponent(a.key)}/proof`, target: '_blank', rel: 'noopener' }, 'proof (aer1-anchor-proof-v1)')));
    box.replaceChildren(...parts);
    box.hidden = false;
  }

  async function lookup(key) {
    key = key.trim();
    if (!key) return;
    lookedUp = key;
    $('#lookup-key').value = key;
    const box = $('#lookup-result');
    try {
      renderSubject(await api(`v1/anchors/${encodeURIComponent(key)}`));
    } catch (err) {
      if (err instanceof Unauthorized) return needToken();
      box.replaceChildren(el('p', { class: 'notfound' }, err.status === 404 ? `No subject with key ${key}.` : `Could not look it up: ${err.message}`));
      box.hidden = false;
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
    const at = ev.at ? new Date(ev.at).toLocaleTimeString() : '';
    list.prepend(el('li', { 'data-key': ev.key, 'data-id': ev.id },
      el('span', { class: 'when' }, at),
      el('a', { href: '#', class: 'mono', onclick: (e) => { e.preventDefault(); lookup(ev.key); } }, ev.key),
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

  let source = null;
  function connect() {
    if (source) source.close();
    const url = token() ? `v1/events?access_token=${encodeURIComponent(token())}` : 'v1/events';
    source = new EventSource(url);
    source.onopen = () => {
      setLive('live');
      // changes may have happened while disconnected
      soonStats();
      soonLatest();
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
      if (ev.status === 'confirmed' || ev.previous === 'confirmed') soonLatest();
      if (lookedUp !== null && ev.key === lookedUp) lookup(lookedUp);
    };
  }

  // ---- start

  $('#lookup-form').addEventListener('submit', (e) => {
    e.preventDefault();
    lookup($('#lookup-key').value);
  });
  $('#auth-form').addEventListener('submit', (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('#auth-token').value.trim());
    $('#auth-token').value = '';
    $('#auth').hidden = true;
    start();
  });

  async function start() {
    await Promise.all([refreshStats(), refreshLatest()]);
    if ($('#auth').hidden) connect();
  }

  // ages move on even when nothing changes
  setInterval(refreshStats, 30_000);
  start();
})();
