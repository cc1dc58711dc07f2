/**
 * Lua scripts: every state change that must be atomic (accept, witness transitions,
 * relay reports, batch cuts) is one script, so a crash between two writes cannot
 * leave a subject half-recorded, and every read that must see one moment of several keys (a
 * list page over the status indexes) is one script too. Each lives in its own file under `lua/` (read once, when
 * this module loads) and touches only the keys it is given in KEYS, so a Redis Cluster can
 * route it; what each script takes and returns is written at the top of its file.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const CANDIDATES = [
  // running from src/adapters/state/
  new URL('./lua/', import.meta.url),
  // running from dist/src/adapters/state/ (the package ships src/adapters/state/lua)
  new URL('../../../../src/adapters/state/lua/', import.meta.url),
];

/** The folder holding the scripts; throws naming every place looked at when none does. */
export function luaDir(candidates: readonly URL[] = CANDIDATES): string {
  for (const url of candidates) {
    const dir = fileURLToPath(url);
    if (existsSync(`${dir}accept.lua`)) return dir;
  }
  throw new Error(`Lua scripts not found; looked in ${candidates.map((u) => fileURLToPath(u)).join(', ')}`);
}

export interface LuaScript {
  /** The file's name without `.lua`. */
  name: string;
  lua: string;
}

function load(dir: string, name: string, prelude = ''): LuaScript {
  return { name, lua: prelude + readFileSync(`${dir}${name}.lua`, 'utf8') };
}

const DIR = luaDir();
/** Put in front of the scripts that write the state-change stream: add_events, which keeps it near its length in subject events. */
export const STREAM_LIB = readFileSync(`${DIR}stream-lib.lua`, 'utf8');

/** Accepts one or many subjects (intake of single-subject and bulk jobs); records conflicts. */
export const ACCEPT = load(DIR, 'accept', STREAM_LIB);
/** Records a refused job without touching an accepted subject. */
export const REJECT = load(DIR, 'reject', STREAM_LIB);
/** One witness transition of one subject, only forward. */
export const SET_WITNESS = load(DIR, 'set-witness', STREAM_LIB);
/** One relay's report on an event, never downgrading an acceptance. */
export const SET_RELAY = load(DIR, 'set-relay');
/** Adds relays to the list of those an event was handed to. */
export const MARK_SENT = load(DIR, 'mark-sent');
/** Cuts a batch from the head of a witness's inbox. */
export const CUT_BATCH = load(DIR, 'cut-batch');
/** With the anchor log on: cuts a batch whose root is a signed checkpoint's, from the log's entries (checkpoint-cuts.ts). */
export const CUT_CHECKPOINT = load(DIR, 'cut-checkpoint');
/** Auto mode: links a subject's own event, first stored copy wins. */
export const SET_SUBJECT_EVENT = load(DIR, 'set-subject-event');

/** Nostr relay outboxes: hands events to the relays (outbox-add), the next group due on one relay (outbox-take). */
export const OUTBOX_ADD = load(DIR, 'outbox-add');
export const OUTBOX_TAKE = load(DIR, 'outbox-take');
/** One relay's reports on many events, never downgrading an acceptance. */
export const SET_RELAYS = load(DIR, 'set-relays');

/** One page of the subject list from one or more indexes, in one read (AnchorStore.list). */
export const LIST_PAGE = load(DIR, 'list-page');

/** Retention: removes confirmed subjects whose proofs are archived, every trace of them. */
export const FORGET = load(DIR, 'forget', STREAM_LIB);
/** Retention: removes a batch none of whose subjects is left in Redis, with every key of its own. */
export const DROP_BATCH = load(DIR, 'drop-batch');

/** NIP-03: fixes the event ids an OTS batch commits to and takes the late ones it commits out of the waiting set. */
export const FIX_EVENT_IDS = load(DIR, 'fix-event-ids');
/** NIP-03: notes event ids for a later batch, each once in its life (the event hash keeps the mark). */
export const NOTE_LATE = load(DIR, 'note-late');

export const SCRIPTS: readonly LuaScript[] = [ACCEPT, REJECT, SET_WITNESS, SET_RELAY, MARK_SENT, CUT_BATCH, CUT_CHECKPOINT, SET_SUBJECT_EVENT, LIST_PAGE, FORGET, DROP_BATCH, OUTBOX_ADD, OUTBOX_TAKE, SET_RELAYS, FIX_EVENT_IDS, NOTE_LATE];
