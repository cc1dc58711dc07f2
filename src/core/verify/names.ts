/**
 * Untrusted names (file names, relay URLs) as the text output shows them: control and
 * line-breaking characters escaped, so no name can start a line of its own (a forged
 * `VERDICT:`) or drive the terminal, and bounded in length. `--json` keeps them as they are.
 */

/** Longest name shown; longer ones keep their start and end around an ellipsis. */
export const MAX_NAME_CHARS = 200;

// C0, DEL, C1, line and paragraph separators, bidi overrides and isolates
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function escapeChar(c: string): string {
  switch (c) {
    case '\n': return '\\n';
    case '\r': return '\\r';
    case '\t': return '\\t';
    default: {
      const code = c.charCodeAt(0);
      return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
    }
  }
}

/** A name for one line of text: escaped, at most MAX_NAME_CHARS characters. */
export function displayName(name: string, max = MAX_NAME_CHARS): string {
  const escaped = name.replace(UNSAFE, escapeChar);
  if (escaped.length <= max) return escaped;
  const half = Math.floor((max - 1) / 2);
  return `${escaped.slice(0, half)}…${escaped.slice(escaped.length - half)}`;
}

/** A message for one line: line breaks and other control characters escaped. */
export function oneLine(s: string): string {
  return s.replace(UNSAFE, escapeChar);
}
