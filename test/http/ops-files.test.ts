/**
 * The ops files in docs/ agree with the daemon: every metric the Grafana dashboard, the
 * Prometheus alerts and the recording rules name is in a real daemon's /metrics (with the
 * labels they match on and group by, and with a series from the start), the rules files are
 * well-formed YAML of the shape Prometheus loads, every relay and calendar metric names its
 * endpoint with the one label `url` in one form, and the gauges added for the alerts
 * (witness endpoints, Redis writability) say what happened.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { privateRedis, REPO_ROOT, receiptFields, waitFor } from '../helpers/harness.js';
import { startStack, type Stack } from './fixture.js';

const DASHBOARD = join(REPO_ROOT, 'docs/grafana/aer1-anchor.json');
const RULES = join(REPO_ROOT, 'docs/prometheus/aer1-anchor.rules.yml');
const RECORDING = join(REPO_ROOT, 'docs/prometheus/aer1-anchor.recording.yml');
/** Series Prometheus makes itself, and the labels it adds to every scraped one. */
const PROMETHEUS_SERIES = new Set(['up']);
const PROMETHEUS_LABELS = new Set(['instance', 'job']);
const KEYWORDS = new Set(['by', 'without', 'and', 'or', 'unless', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset', 'inf', 'nan']);

interface Selector {
  metric: string;
  labels: string[];
}

/** The metric selectors of a PromQL expression: names (not functions or keywords) and the labels each matches on. */
export function selectors(expr: string): Selector[] {
  let depth = 0;
  for (const ch of expr) {
    if ('({['.includes(ch)) depth++;
    if (')}]'.includes(ch)) depth--;
    if (depth < 0) throw new Error(`unbalanced brackets in ${expr}`);
  }
  if (depth !== 0) throw new Error(`unbalanced brackets in ${expr}`);
  const text = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const out: Selector[] = [];
  for (const m of text.matchAll(/(?<![a-zA-Z0-9_:$.])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*(\()?/g)) {
    const [, name, braces, call] = m;
    if (call || KEYWORDS.has(name!.toLowerCase()) || /^\d/.test(name!)) continue;
    const labels = braces ? [...braces.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)/g)].map((l) => l[1]!) : [];
    out.push({ metric: name!, labels });
  }
  return out;
}

function dashboardExprs(): string[] {
  const dash = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Array<{ targets?: Array<{ expr: string }>; panels?: unknown[] }>; templating: { list: Array<{ query?: unknown }> } };
  const exprs: string[] = [];
  const walk = (panels: Array<{ targets?: Array<{ expr: string }>; panels?: unknown[] }>): void => {
    for (const p of panels) {
      for (const t of p.targets ?? []) exprs.push(t.expr);
      walk((p.panels ?? []) as typeof panels);
    }
  };
  walk(dash.panels);
  for (const v of dash.templating.list) {
    const q = typeof v.query === 'object' && v.query ? (v.query as { query?: string }).query : undefined;
    const m = q ? /^label_values\((\w+),\s*(\w+)\)$/.exec(q) : null;
    if (m) exprs.push(`${m[1]}`);
  }
  return exprs;
}

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: string };
  annotations: { summary: string; description: string };
}

interface RecordingRule {
  record: string;
  expr: string;
  labels?: Record<string, string>;
}

function recordingRules(): RecordingRule[] {
  const doc = parse(readFileSync(RECORDING, 'utf8')) as { groups: Array<{ name: string; rules: RecordingRule[] }> };
  return doc.groups.flatMap((g) => g.rules);
}

/** The label names an expression groups by (`by (a, b)`), which must exist on the metric too. */
function groupedBy(expr: string): string[] {
  return [...expr.matchAll(/\bby\s*\(([^)]*)\)/g)].flatMap((m) => m[1]!.split(',').map((l) => l.trim()).filter((l) => l !== '' && l !== 'le'));
}

function rules(): Rule[] {
  const doc = parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> };
  return doc.groups.flatMap((g) => g.rules);
}

/** Metric names with at least one sample in the last exposition read. */
const sampled = new Set<string>();

/** name → the label names seen on its series (a histogram's _bucket/_sum/_count under their own names); every `# TYPE` name, even without samples. */
function exposition(text: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (name: string): Set<string> => {
    let s = out.get(name);
    if (!s) out.set(name, (s = new Set()));
    return s;
  };
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      add(type[1]!);
      if (type[2] === 'histogram' || type[2] === 'summary') for (const sfx of ['_bucket', '_sum', '_count']) add(`${type[1]}${sfx}`);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels = add(m[1]!);
    sampled.add(m[1]!);
    for (const [, k] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) labels.add(k!);
  }
  return out;
}

describe('the Prometheus rules file', () => {
  it('parses as YAML into groups of alerting rules with a severity, a summary and a description', () => {
    const doc = parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> };
    expect(doc.groups.length).toBeGreaterThan(0);
    const all = rules();
    expect(new Set(all.map((r) => r.alert)).size).toBe(all.length);
    for (const r of all) {
      expect(Object.keys(r).filter((k) => !['alert', 'expr', 'for', 'labels', 'annotations'].includes(k)), r.alert).toEqual([]);
      expect(r.alert).toMatch(/^Aer1[A-Za-z]+$/);
      expect(typeof r.expr).toBe('string');
      expect(() => selectors(r.expr), r.alert).not.toThrow();
      if (r.for !== undefined) expect(r.for, r.alert).toMatch(/^\d+[smh]$/);
      expect(['critical', 'warning', 'info']).toContain(r.labels.severity);
      expect(r.annotations.summary.length, r.alert).toBeGreaterThan(10);
      expect(r.annotations.description.length, r.alert).toBeGreaterThan(20);
    }
    // the alerts the operations notes promise
    for (const metric of ['aer1_redis_writable', 'aer1_witness_endpoint_failing', 'aer1_anchor_oldest_pending_seconds', 'aer1_queue_jobs', 'aer1_reconciler_repairs_total']) {
      expect(all.some((r) => selectors(r.expr).some((s) => s.metric === metric)), metric).toBe(true);
    }
  });

  it('the recording rules parse into named rules (level:metric:operations), each used name defined once', () => {
    const all = recordingRules();
    expect(all.length).toBeGreaterThan(5);
    expect(new Set(all.map((r) => r.record)).size).toBe(all.length);
    for (const r of all) {
      expect(Object.keys(r).filter((k) => !['record', 'expr', 'labels'].includes(k)), r.record).toEqual([]);
      expect(r.record).toMatch(/^[a-z_]+:aer1_[a-z0-9_]+:[a-z0-9_]+$/);
      expect(() => selectors(r.expr), r.record).not.toThrow();
      // it keeps the instance, so one daemon's series stay apart
      expect(groupedBy(r.expr), r.record).toContain('instance');
    }
    // what the dashboard and the alerts lean on most is recorded
    for (const metric of ['aer1_relay_publish_total', 'aer1_calendar_requests_total', 'aer1_witness_endpoint_failing', 'aer1_witness_endpoint_throttled', 'aer1_anchor_time_to_confirm_seconds_bucket', 'aer1_reconciler_repairs_total']) {
      expect(all.some((r) => selectors(r.expr).some((s) => s.metric === metric)), metric).toBe(true);
    }
  });

  it('the selector reader finds names and matched labels, not functions, keywords or ranges', () => {
    expect(selectors('histogram_quantile(0.95, sum by (le, witness) (rate(x_bucket{instance=~"$i", a!="b"}[$__rate_interval])))')).toEqual([{ metric: 'x_bucket', labels: ['instance', 'a'] }]);
    expect(selectors('min by (instance, kind) (m) == 1 and on (instance) up{job="j"} offset 5m')).toEqual([{ metric: 'm', labels: [] }, { metric: 'up', labels: ['job'] }]);
    expect(() => selectors('sum(rate(x[5m])')).toThrow(/unbalanced/);
  });
});

describe('dashboard and rules against a real daemon', () => {
  let s: Stack;
  let names: Map<string, Set<string>>;
  let text = '';

  beforeAll(async () => {
    s = await startStack();
    // one subject through both witnesses, so the counters and the histogram have series with their labels
    const subject = receiptFields();
    expect((await s.post('/v1/anchors', subject, { auth: true })).status).toBe(202);
    await waitFor('OTS batch submitted', async () => (await s.daemon.store.subjects.getRecord(subject.receipt_uuid))?.witnesses.ots?.status === 'pending' && s.calendars[0]!.pendingCount() > 0);
    await s.confirm([subject.receipt_uuid]);
    const res = await s.get('/metrics', { auth: true });
    expect(res.status).toBe(200);
    text = await res.text();
    names = exposition(text);
  });

  afterAll(async () => {
    await s?.close();
  });

  it('every metric the dashboard, the alerts and the recording rules name is in /metrics, with the labels they match on and group by, and a series', () => {
    const recorded = new Set(recordingRules().map((r) => r.record));
    const exprs = [...dashboardExprs(), ...rules().map((r) => r.expr), ...recordingRules().map((r) => r.expr)];
    const noSeries: string[] = [];
    expect(exprs.length).toBeGreaterThan(20);
    const missing: string[] = [];
    const badLabels: string[] = [];
    let checked = 0;
    for (const e of exprs) {
      const sels = selectors(e);
      for (const sel of sels) {
        if (PROMETHEUS_SERIES.has(sel.metric) || recorded.has(sel.metric)) continue;
        checked++;
        const labels = names.get(sel.metric);
        if (!labels) {
          missing.push(sel.metric);
          continue;
        }
        // a panel or rule over a metric without a series says "No data": counters start at 0 for their known labels
        if (!sampled.has(sel.metric)) noSeries.push(sel.metric);
        const wanted = [...sel.labels, ...(sels.length === 1 ? groupedBy(e) : [])];
        for (const l of wanted) if (!PROMETHEUS_LABELS.has(l) && !labels.has(l)) badLabels.push(`${sel.metric}{${l}}`);
      }
    }
    expect(checked).toBeGreaterThan(30);
    expect(missing).toEqual([]);
    expect(badLabels).toEqual([]);
    expect([...new Set(noSeries)]).toEqual([]);
  });

  it('names each relay and calendar with one label, url, in one form, on every endpoint metric', () => {
    const endpointMetrics = ['aer1_relay_publish_total', 'aer1_calendar_requests_total', 'aer1_witness_endpoint_failing', 'aer1_witness_endpoint_throttled', 'aer1_witness_endpoint_consecutive_failures'];
    for (const m of endpointMetrics) {
      expect(names.get(m), m).toBeDefined();
      expect(names.get(m)!.has('url'), m).toBe(true);
      expect([...names.get(m)!].filter((l) => ['relay', 'calendar'].includes(l)), m).toEqual([]);
    }
    const urls = (metric: string, kind: string): string[] =>
      [...new Set([...text.matchAll(new RegExp(`^${metric}\\{([^}]*)\\} `, 'gm'))].map((m) => m[1]!).filter((l) => !l.includes('kind=') || l.includes(`kind="${kind}"`)).map((l) => /url="([^"]*)"/.exec(l)![1]!))].sort();
    const relays = s.relays.map((r) => new URL(r.url).href).sort();
    const calendars = s.calendars.map((c) => new URL(c.url).href).sort();
    expect(urls('aer1_relay_publish_total', 'relay')).toEqual(relays);
    expect(urls('aer1_witness_endpoint_failing', 'relay')).toEqual(relays);
    expect(urls('aer1_calendar_requests_total', 'calendar')).toEqual(calendars);
    expect(urls('aer1_witness_endpoint_failing', 'calendar')).toEqual(calendars);
  });

  it('has every reconciler repair kind at 0 before any repair', () => {
    for (const kind of ['inbox', 'relay-publish', 'relay-reopen', 'nostr-witness', 'nostr-batch', 'ots-submit', 'ots-poll', 'nip03']) {
      expect(text).toMatch(new RegExp(`^aer1_reconciler_repairs_total\\{kind="${kind}"\\} 0$`, 'm'));
    }
  });

  it('reports each relay and calendar as not failing, and Redis as writable', () => {
    expect([...(names.get('aer1_witness_endpoint_failing') ?? [])].sort()).toEqual(['kind', 'url']);
    expect(names.get('aer1_redis_writable')).toBeDefined();
  });
});

describe('aer1_redis_writable', () => {
  it('is 1 while Redis takes writes and 0 once it refuses them (maxmemory reached, noeviction)', { timeout: 90_000 }, async () => {
    const redis = await privateRedis(false);
    const admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    let s: Stack | undefined;
    try {
      s = await startStack({ redisUrl: redis.url });
      const gauge = async (): Promise<string | undefined> => /^aer1_redis_writable (\S+)$/m.exec(await (await s!.get('/metrics', { auth: true })).text())?.[1];
      expect(await gauge()).toBe('1');
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await admin.config('SET', 'maxmemory', '1');
      expect(await gauge()).toBe('0');
      const ready = await s.get('/readyz');
      expect(ready.status).toBe(503);
    } finally {
      await admin.config('SET', 'maxmemory', '0').catch(() => undefined);
      await s?.close();
      admin.disconnect();
      await redis.stop();
    }
  });
});
