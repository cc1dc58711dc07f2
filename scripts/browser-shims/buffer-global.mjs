// Injected into every module of the browser bundle: the verify code uses Node's Buffer.
export { Buffer } from 'buffer';
