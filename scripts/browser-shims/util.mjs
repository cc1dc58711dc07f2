// node:util for the browser bundle: only inspect.custom (the key types' redaction hook) is used.
export const inspect = Object.assign(() => '[object]', { custom: Symbol.for('nodejs.util.inspect.custom') });
export default { inspect };
