/**
 * One client connection of the dev relay: the NIP-42 challenge on connect, and every
 * message screened before the relay library sees it (JSON, the profile's size cap, the
 * fault switches, the message shape, the event's id and signature). Each refusal of an
 * EVENT is an `OK false` with a prefixed reason, because publishers wait for an OK.
 */
import type { IncomingMessage as HttpRequest } from 'node:http';
import type { WebSocket } from 'ws';
import type { NostrRelay } from '@nostr-relay/core';
import type { Validator } from '@nostr-relay/validator';
import type { Event as RelayEvent, IncomingMessage } from '@nostr-relay/common';
import type { RelayProfileState } from './relay-profiles.js';

export interface DevRelayFaults {
  /** Never answer an EVENT (no OK, no NOTICE): publishers time out. */
  silent: boolean;
  /** Close the connection abruptly upon receiving an EVENT. */
  dropOnEvent: boolean;
}

/** What a connection needs from the relay it belongs to. */
export interface RelayConnectionContext {
  relay: NostrRelay;
  validator: Validator;
  /** The library's id and signature check: a reason, or undefined when the event is good. */
  validateEvent: (event: RelayEvent) => string | undefined;
  profile: RelayProfileState;
  faults: DevRelayFaults;
}

/** Takes a new WebSocket connection: registers it with the relay and screens its messages. */
export function acceptConnection(context: RelayConnectionContext, ws: WebSocket, req: HttpRequest): void {
  const { relay, profile } = context;
  profile.connected();
  if (profile.name === 'auth' && profile.authChallenge === 'demand') {
    // @nostr-relay/core sends its challenge on connect: hold that one back (it stays the
    // connection's challenge, sent with the first auth-required: answer)
    const send = ws.send.bind(ws);
    ws.send = (() => undefined) as typeof ws.send;
    relay.handleConnection(ws, req.socket.remoteAddress);
    ws.send = send;
  } else {
    relay.handleConnection(ws, req.socket.remoteAddress);
  }
  ws.on('message', (data, isBinary) => {
    const text = isBinary ? null : Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8');
    if (text === null) {
      send(ws, ['NOTICE', 'invalid: binary messages are not accepted']);
      return;
    }
    void onMessage(context, ws, text);
  });
  ws.on('close', () => relay.handleDisconnect(ws));
  ws.on('error', () => undefined);
}

function send(ws: WebSocket, message: unknown[]): void {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
}

async function onMessage(context: RelayConnectionContext, ws: WebSocket, text: string): Promise<void> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    send(ws, ['NOTICE', 'invalid: message is not JSON']);
    return;
  }
  const isEvent = Array.isArray(parsed) && parsed[0] === 'EVENT';
  if (isEvent && !admitEventFrame(context, ws, text, parsed)) return;
  const message = await validMessage(context, ws, parsed, isEvent);
  if (message === undefined) return;
  try {
    await context.relay.handleMessage(ws, message);
  } catch (err) {
    const reason = withPrefix('error', (err as Error).message);
    send(ws, message[0] === 'EVENT' ? ['OK', message[1].id, false, reason] : ['NOTICE', reason]);
  }
}

/** The profile's size cap and the fault switches, applied to an EVENT frame; false when it goes no further. */
function admitEventFrame(context: RelayConnectionContext, ws: WebSocket, text: string, parsed: unknown): boolean {
  const { profile, faults } = context;
  if (profile.maxMessageLength !== undefined && Buffer.byteLength(text, 'utf8') > profile.maxMessageLength) {
    profile.refused('invalid');
    send(ws, ['OK', eventIdOf(parsed), false, `invalid: message over ${profile.maxMessageLength} bytes`]);
    return false;
  }
  if (faults.dropOnEvent) {
    ws.terminate();
    return false;
  }
  return !faults.silent;
}

/** The message in the library's shape, with a good event id and signature; undefined once refused. */
async function validMessage(context: RelayConnectionContext, ws: WebSocket, parsed: unknown, isEvent: boolean): Promise<IncomingMessage | undefined> {
  const claimedId = isEvent ? eventIdOf(parsed) : '';
  let message: IncomingMessage;
  try {
    message = await context.validator.validateIncomingMessage(parsed as never);
  } catch (err) {
    const reason = withPrefix('invalid', (err as Error).message);
    // the library's default answer is a NOTICE; publishers wait for an OK
    send(ws, isEvent ? ['OK', claimedId, false, reason] : ['NOTICE', reason]);
    return undefined;
  }
  if (message[0] === 'EVENT') {
    const problem = context.validateEvent(message[1]);
    if (problem) {
      send(ws, ['OK', message[1].id, false, withPrefix('invalid', problem)]);
      return undefined;
    }
  }
  return message;
}

function eventIdOf(parsed: unknown): string {
  const event: unknown = Array.isArray(parsed) ? parsed[1] : undefined;
  if (event !== null && typeof event === 'object') {
    const id = (event as Record<string, unknown>)['id'];
    if (typeof id === 'string') return id;
  }
  return '';
}

function withPrefix(prefix: string, message: string): string {
  return /^[a-z-]+: /.test(message) ? message : `${prefix}: ${message}`;
}
