/**
 * The relay frames RelayClient reads itself, before (or instead of) nostr-tools'
 * AbstractRelay: OK answers to its publishes, and EVENT frames of its fetches kept as
 * the exact text the relay sent.
 */

/** A relay's `["OK", <event id>, <accepted>, <message>]` answer. */
export interface OkAnswer {
  id: string;
  ok: boolean;
  message: string;
}

const OK_HEAD = '["OK","';

/**
 * Reads an OK answer, or undefined for any other frame. The shape relays send,
 * `["OK","<64 hex>",true|false,"<message>"]` without spaces, is read without a JSON
 * parse of the whole frame; anything else (spaces, a missing message) goes through one.
 */
export function parseOkFrame(text: string): OkAnswer | undefined {
  if (text.startsWith(OK_HEAD) && text.charCodeAt(71) === 0x22 && text.charCodeAt(72) === 0x2c && text.endsWith('"]')) {
    const ok = text.startsWith('true,"', 73);
    if (ok || text.startsWith('false,"', 73)) {
      // the message's opening quote is at 78 (after `true,`) or 79 (after `false,`)
      const message = quoted(text.slice(ok ? 78 : 79, -1));
      if (message !== undefined) return { id: text.slice(7, 71), ok, message };
    }
  }
  if (!text.slice(0, 16).includes('"OK"')) return undefined;
  try {
    const frame: unknown = JSON.parse(text);
    if (Array.isArray(frame) && frame[0] === 'OK' && typeof frame[1] === 'string') {
      return { id: frame[1], ok: frame[2] === true, message: typeof frame[3] === 'string' ? frame[3] : '' };
    }
  } catch {
    // AbstractRelay reports malformed frames itself
  }
  return undefined;
}

/** A JSON string literal's value, or undefined when `literal` is not exactly one. */
function quoted(literal: string): string | undefined {
  try {
    const value: unknown = JSON.parse(literal);
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Splits `["EVENT", "<sub id>", {...}]` into the subscription id and the event's
 * JSON text exactly as sent (whitespace around it trimmed).
 */
export function splitEventFrame(text: string): { subId: string; eventJson: string } | undefined {
  let i = 0;
  const ws = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i] as string)) i++;
  };
  const str = (): string | undefined => {
    if (text[i] !== '"') return undefined;
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    if (i >= text.length) return undefined;
    i++;
    try {
      return JSON.parse(text.slice(start, i)) as string;
    } catch {
      return undefined;
    }
  };
  ws();
  if (text[i] !== '[') return undefined;
  i++;
  ws();
  if (str() !== 'EVENT') return undefined;
  ws();
  if (text[i] !== ',') return undefined;
  i++;
  ws();
  const subId = str();
  if (subId === undefined) return undefined;
  ws();
  if (text[i] !== ',') return undefined;
  i++;
  let end = text.length;
  while (end > i && ' \t\n\r'.includes(text[end - 1] as string)) end--;
  if (text[end - 1] !== ']') return undefined;
  end--;
  const eventJson = text.slice(i, end).trim();
  try {
    const v: unknown = JSON.parse(eventJson);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  } catch {
    return undefined;
  }
  return { subId, eventJson };
}
