/**
 * The fields a witness keeps in its batch's hash (`{prefix}:b:<witness>:<id>`) beside the
 * digests: OTS (calendars, root timestamp, upgrade poll, Bitcoin block, NIP-03 publishing)
 * and Nostr (its signed event, the mode decided), read into and written from typed values.
 * Pure: BatchStore reads and writes them.
 */

/**
 * An OTS batch's own state beside its digests, as its witness reads it (the field names are
 * this module's). Written with OtsBatchUpdate.
 */
export interface OtsBatchState {
  /** Held by enough calendars: its subjects went pending on OTS. */
  submitted: boolean;
  /** Times the batch was sent back to the calendars (answers committing to another root dropped). */
  round: number;
  /** The upgrade poll in force; null before the first. */
  poll: number | null;
  /** The root (hex) the stored answers were taken on; null when none is recorded. */
  root: string | null;
  /** The root timestamp with every calendar's answer merged under it, serialized, base64; null for none. */
  ts: string | null;
  /** The event tree's root R_e (hex), '' when the batch has none, undefined while not fixed yet (NIP-03). */
  eventsRoot: string | undefined;
  /** The earliest verified Bitcoin block, JSON; null while none. */
  bitcoin: string | null;
  /** NIP-03 publishing of the batch: 'done' once finished; null before. */
  nip03: string | null;
  /** Each calendar's state (CalendarState as JSON), by its configured URL. */
  calendars: Record<string, string>;
}

/** What one write changes of an OTS batch's state: `root` and `ts` null clear them. */
export interface OtsBatchUpdate {
  submitted?: boolean;
  round?: number;
  poll?: number;
  root?: string | null;
  ts?: string | null;
  bitcoin?: string;
  calendars?: Record<string, string>;
}

/** The batch hash fields behind OtsBatchState (`cal:<url>` for each calendar). */
export const OTS_FIELD = { submitted: 'submitted', round: 'round', poll: 'poll', root: 'root', ts: 'ts', eventsRoot: 'events_root', eventIds: 'event_ids32', bitcoin: 'bitcoin', nip03: 'nip03' } as const;
export const CALENDAR_FIELD = 'cal:';
/** A Nostr batch's fields besides its digests: its signed event and the mode decided. */
export const NOSTR_FIELD = { event: 'event', mode: 'mode' } as const;

export function otsStateOf(fields: Record<string, string>): OtsBatchState {
  const calendars: Record<string, string> = {};
  for (const [f, v] of Object.entries(fields)) if (f.startsWith(CALENDAR_FIELD)) calendars[f.slice(CALENDAR_FIELD.length)] = v;
  const poll = fields[OTS_FIELD.poll];
  return {
    submitted: fields[OTS_FIELD.submitted] === '1',
    round: Number(fields[OTS_FIELD.round] ?? 0),
    poll: poll === undefined ? null : Number(poll),
    root: fields[OTS_FIELD.root] || null,
    ts: fields[OTS_FIELD.ts] || null,
    eventsRoot: fields[OTS_FIELD.eventsRoot],
    bitcoin: fields[OTS_FIELD.bitcoin] || null,
    nip03: fields[OTS_FIELD.nip03] ?? null,
    calendars,
  };
}

export function otsFieldsOf(u: OtsBatchUpdate): Record<string, string> {
  const out: Record<string, string> = {};
  if (u.submitted !== undefined) out[OTS_FIELD.submitted] = u.submitted ? '1' : '0';
  if (u.round !== undefined) out[OTS_FIELD.round] = String(u.round);
  if (u.poll !== undefined) out[OTS_FIELD.poll] = String(u.poll);
  if (u.root !== undefined) out[OTS_FIELD.root] = u.root ?? '';
  if (u.ts !== undefined) out[OTS_FIELD.ts] = u.ts ?? '';
  if (u.bitcoin !== undefined) out[OTS_FIELD.bitcoin] = u.bitcoin;
  for (const [url, state] of Object.entries(u.calendars ?? {})) out[`${CALENDAR_FIELD}${url}`] = state;
  return out;
}

/** What a proof takes from a subject's batch besides its digests (export.ts). */
export interface ProofBatchFields {
  /** Nostr: the batch's signed event (JSON) and the mode auto mode decided for it. */
  event: string | null;
  mode: string | null;
  /** OTS: the root timestamp (base64), the verified block (JSON), each calendar's state (JSON) by URL. */
  ts: string | null;
  bitcoin: string | null;
  /** OTS: held by enough calendars (the calendars it went to are then only those recorded). */
  submitted: boolean;
  calendars: Record<string, string>;
}

/** A packed list of 32-byte ids (their bytes, no separator) as hex. */
export function splitIds(packed: Buffer): string[] {
  const out: string[] = [];
  for (let i = 0; i + 32 <= packed.length; i += 32) out.push(packed.toString('hex', i, i + 32));
  return out;
}
