export { CA_FILE, MAX_REQUEST_BYTES, TSA_CERT_FILE, startDevTsa, type DevTsa, type DevTsaOptions } from './dev-tsa.js';
export { makeDevCa, makeDevTsaCertificate, toPem, type DevCertificate, type TsaCertificateOptions } from './dev-pki.js';
export { DEV_TSA_POLICY, TsaResponder, type ResponderOptions } from './tsa-responder.js';
