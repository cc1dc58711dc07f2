// /verify: runs the verifier bundle (verify.bundle.js, global aer1Verify: the CLI's code) on
// files dropped here. Nothing is uploaded; only an Esplora URL the user types is fetched, and
// the proof of the subject a link names (?key=) from this daemon.
// Plain script; text from files is only ever set as textContent.
'use strict';

(() => {
  const $ = (sel, root = document) => root.querySelector(sel);
  const ROLES = ['document', 'proof', 'headers', 'trust'];
  const ROLE_TEXT = { document: 'document (FILE)', proof: 'proof (--proof)', headers: 'headers (--headers)', trust: 'trust file (--trust-file)', ignored: 'not used' };
  /** @type {{name: string, bytes: Uint8Array, role: string}[]} */
  const files = [];

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

  if (window.aer1VerifyMissing || !window.aer1Verify) {
    const box = $('#verify-missing');
    box.textContent = window.aer1VerifyMissing ?? 'The verifier bundle (verify.bundle.js) did not load.';
    box.hidden = false;
    $('#run').disabled = true;
    return;
  }
  const V = window.aer1Verify;

  // one document and one proof at most: a newer file in a slot pushes the older one out of use
  function place(file) {
    let role = V.guessRole(file);
    if (role === 'proof' && !files.some((f) => f.role === 'document')) role = 'document';
    if (role === 'document' && files.some((f) => f.role === 'document')) {
      const doc = files.find((f) => f.role === 'document');
      // a bare proof first, then its document: the proof moves to --proof
      if (V.guessRole(doc) === 'proof') doc.role = 'proof';
      else doc.role = 'ignored';
    }
    if (role === 'proof' || role === 'headers') for (const f of files) if (f.role === role) f.role = 'ignored';
    files.push({ ...file, role });
  }

  function renderFiles() {
    const rows = files.map((f, i) => {
      const select = el('select', { 'data-file': f.name, onchange: (e) => { setRole(i, e.target.value); } },
        ...[...ROLES, 'ignored'].map((r) => el('option', { value: r, selected: r === f.role }, ROLE_TEXT[r])));
      return el('tr', { 'data-file': f.name, 'data-role': f.role },
        el('td', { class: 'mono' }, f.name),
        el('td', {}, select),
        el('td', {}, `${f.bytes.length.toLocaleString('en')} bytes`),
        el('td', {}, el('button', { type: 'button', class: 'small', onclick: () => { files.splice(i, 1); renderFiles(); } }, 'remove')));
    });
    $('#files tbody').replaceChildren(...rows);
    $('#files-empty').hidden = rows.length > 0;
    noteNetwork();
  }

  function setRole(i, role) {
    if (role === 'document' || role === 'proof' || role === 'headers') for (const f of files) if (f.role === role) f.role = 'ignored';
    files[i].role = role;
    renderFiles();
  }

  function noteNetwork() {
    const url = $('#esplora').value.trim();
    $('#network-note').textContent = url
      ? `Verifying will fetch block headers from ${url}.`
      : 'Verifying stays in this page: no network request.';
  }

  async function add(list) {
    for (const file of list) {
      const bytes = new Uint8Array(await file.arrayBuffer());
      place({ name: file.name, bytes });
    }
    renderFiles();
    if (files.some((f) => f.role === 'document')) await run();
  }

  function request() {
    const one = (role) => files.find((f) => f.role === role) ?? null;
    const pick = (f) => (f ? { name: f.name, bytes: f.bytes } : null);
    return {
      document: pick(one('document')),
      proof: pick(one('proof')),
      headers: pick(one('headers')),
      trustFiles: files.filter((f) => f.role === 'trust').map(pick),
      expectedPubkeys: $('#pubkeys').value.split(/[\s,]+/).filter(Boolean),
      esplora: $('#esplora').value.trim() || null,
      network: $('#network').value,
      requireConfirmed: $('#require-confirmed').checked,
    };
  }

  function renderResult(r) {
    const box = $('#result');
    const verdict = $('#verdict');
    const state = r.error ? 'ERROR' : r.report.verdict;
    verdict.dataset.verdict = state;
    verdict.replaceChildren(...[
      el('span', { class: 'word' }, state === 'ERROR' ? 'CANNOT VERIFY' : state),
      el('span', { class: 'reason' }, r.error ? r.error.replace(/^aer1-verify-anchor: /, '') : r.report.reason),
      r.report?.pending ? el('span', { class: 'badge pending' }, 'no witness confirmed yet') : null,
    ].filter(Boolean));
    const checks = r.report?.checks ?? [];
    $('#checks').hidden = checks.length === 0;
    $('#checks tbody').replaceChildren(...checks.map((c) =>
      el('tr', { 'data-check': c.name, 'data-status': c.status },
        el('td', { class: 'mono nowrap' }, c.name),
        el('td', {}, el('span', { class: `badge check-${c.status}` }, c.status)),
        el('td', {}, c.detail))));
    const ws = [];
    for (const name of ['nostr', 'ots']) {
      const w = r.report?.witnesses?.[name];
      if (!w) continue;
      ws.push(el('div', { class: 'witness', 'data-witness': name },
        el('h4', {}, name === 'nostr' ? 'Nostr' : 'OpenTimestamps', ' ', el('span', { class: `badge ${w.verified}` }, w.verified), el('span', { class: 'muted' }, ` (the proof claims ${w.claimed})`)),
        w.established.length ? el('p', {}, el('strong', {}, 'Established: '), w.established.join('; ')) : null,
        w.not_established.length ? el('p', {}, el('strong', {}, 'Not established: '), w.not_established.join('; ')) : null));
    }
    $('#witnesses').replaceChildren(...ws);
    $('#command').textContent = r.command;
    $('#cli-text').textContent = r.error ? `${r.error}\n(exit ${r.exitCode})` : `${r.text}(exit ${r.exitCode})`;
    box.hidden = false;
  }

  let running = null;
  async function run() {
    if (running) return running;
    $('#run').disabled = true;
    running = (async () => {
      try {
        renderResult(await V.verifyDropped(request(), V.version));
      } finally {
        running = null;
        $('#run').disabled = false;
      }
    })();
    return running;
  }

  const drop = $('#drop');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    void add([...(e.dataTransfer?.files ?? [])]);
  });
  drop.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); $('#file-input').click(); } });
  $('#file-input').addEventListener('change', (e) => {
    void add([...e.target.files]);
    e.target.value = '';
  });
  $('#esplora').addEventListener('input', noteNetwork);
  $('#run').addEventListener('click', () => void run());

  // /verify?key=KEY[&pubkey=HEX][&network=NET], the status page's "verify it in the browser": the
  // subject's proof from this daemon (with the status page's token, never in a URL) and the signer
  // the link names, in the fields the reader can still change.
  async function loadFromAddress() {
    const q = new URLSearchParams(location.search);
    if (q.get('pubkey')) $('#pubkeys').value = q.get('pubkey');
    if ([...$('#network').options].some((o) => o.value === q.get('network'))) $('#network').value = q.get('network');
    const key = q.get('key');
    if (!key) return;
    const say = (text) => {
      $('#load-error').textContent = text;
      $('#load-error').hidden = false;
    };
    const headers = { Accept: 'application/json' };
    const token = sessionStorage.getItem('aer1-anchor-token');
    if (token) headers.Authorization = `Bearer ${token}`;
    try {
      const res = await fetch(`v1/anchors/${encodeURIComponent(key)}/proof`, { headers, cache: 'no-store' });
      if (!res.ok) {
        const body = await res.json().catch(() => null);
        return say(`Could not load the proof of ${key} from this daemon: ${body?.error?.message ?? `HTTP ${res.status}`}`);
      }
      place({ name: `${key}.proof.json`, bytes: new Uint8Array(await res.arrayBuffer()) });
    } catch (err) {
      return say(`Could not load the proof of ${key} from this daemon: ${err.message}`);
    }
    renderFiles();
    await run();
  }

  document.body.dataset.ready = 'true';
  noteNetwork();
  void loadFromAddress();
})();
