/**
 * Every configuration key the daemon reads: its type, default, environment variable and
 * meaning. One table, so the validator, the README's reference and the tests agree.
 */

export type KeyType =
  | { kind: 'string' }
  | { kind: 'optional-string' }
  | { kind: 'int'; min: number; max: number }
  | { kind: 'bool' }
  | { kind: 'enum'; values: readonly string[] }
  | { kind: 'url-list'; protocols: readonly string[] }
  | { kind: 'optional-url'; protocols: readonly string[] }
  | { kind: 'host-list' }
  | { kind: 'webhooks' };

export interface KeySpec {
  key: string;
  type: KeyType;
  default: unknown;
  env: string;
  doc: string;
}

const int = (min: number, max: number): KeyType => ({ kind: 'int', min, max });
const MS_DAY = 86_400_000;

export const CONFIG_KEYS: readonly KeySpec[] = [
  { key: 'redis.url', type: { kind: 'optional-url', protocols: ['redis:', 'rediss:'] }, default: null, env: 'REDIS_URL', doc: 'Redis to use. Unset: 127.0.0.1:6379 when it answers, else the embedded redis-server.' },
  { key: 'redis.prefix', type: { kind: 'string' }, default: 'aer1', env: 'AER1_REDIS_PREFIX', doc: 'Key prefix; wrapped in a hash tag ({aer1}) so every key lands in one Redis Cluster slot.' },
  { key: 'redis.localDefault', type: { kind: 'bool' }, default: true, env: 'AER1_REDIS_LOCAL_DEFAULT', doc: 'With no Redis configured, use 127.0.0.1:6379 when it answers; off: go straight to the embedded redis-server.' },
  { key: 'redis.embedded', type: { kind: 'bool' }, default: true, env: 'AER1_REDIS_EMBEDDED', doc: 'Start and supervise a private redis-server when no Redis is configured or answering.' },
  { key: 'redis.embeddedDir', type: { kind: 'string' }, default: './var/redis', env: 'AER1_REDIS_EMBEDDED_DIR', doc: 'Data folder of the embedded redis-server (append-only file on, noeviction).' },

  { key: 'queue.name', type: { kind: 'string' }, default: 'aer1-anchor', env: 'AER1_QUEUE_NAME', doc: 'BullMQ queue that issuers enqueue anchoring jobs on (job name "anchor").' },
  { key: 'queue.concurrency', type: int(1, 1000), default: 32, env: 'AER1_QUEUE_CONCURRENCY', doc: 'Intake jobs processed at once by one daemon.' },
  { key: 'queue.stalledIntervalMs', type: int(1000, 600_000), default: 30_000, env: 'AER1_QUEUE_STALLED_INTERVAL_MS', doc: 'How often a crashed daemon\'s in-flight jobs are looked for and handed back.' },
  { key: 'queue.maxSubjectsPerJob', type: int(1, 10_000), default: 1000, env: 'AER1_QUEUE_MAX_SUBJECTS_PER_JOB', doc: 'Most subjects one bulk job (`{"subjects": [...]}`) may carry; a bigger one is refused whole. Producers split longer lists into jobs of this size.' },

  { key: 'reconcile.intervalMs', type: int(100, MS_DAY), default: 60_000, env: 'AER1_RECONCILE_INTERVAL_MS', doc: 'How often the reconciler re-creates jobs that died (one daemon at a time); subjects younger than this are left to intake.' },
  { key: 'reconcile.limit', type: int(1, 1_000_000), default: 10_000, env: 'AER1_RECONCILE_LIMIT', doc: 'Subjects the reconciler checks per witness and status in one pass (it resumes where it stopped).' },
  { key: 'reconcile.reopenAfterMs', type: int(1000, 365 * MS_DAY), default: 3_600_000, env: 'AER1_RECONCILE_REOPEN_AFTER_MS', doc: 'A relay given up on this long ago gets a new round of attempts when the quorum cannot be met without it.' },

  { key: 'limits.maxJobBytes', type: int(1024, 64 * 1024 * 1024), default: 4 * 1024 * 1024, env: 'AER1_LIMIT_MAX_JOB_BYTES', doc: 'Largest job document accepted (bytes of its JSON).' },
  { key: 'limits.maxSteps', type: int(1, 10_000_000), default: 100_000, env: 'AER1_LIMIT_MAX_STEPS', doc: 'Most steps in one workflow close.' },
  { key: 'limits.maxEntries', type: int(1, 10_000_000), default: 100_000, env: 'AER1_LIMIT_MAX_ENTRIES', doc: 'Most entries in one job timeline.' },

  { key: 'nostr.enabled', type: { kind: 'bool' }, default: true, env: 'AER1_NOSTR_ENABLED', doc: 'Publish signed envelopes (or batch roots) to Nostr relays.' },
  { key: 'nostr.mode', type: { kind: 'enum', values: ['auto', 'envelope', 'batch'] }, default: 'auto', env: 'AER1_NOSTR_MODE', doc: '"auto": one event per subject while a cut, on top of the relays\' backlog or the events queued within nostr.autoHorizonMs, fits in what nostr.ratePerMinute sends in that time; else one batch event per cut (docs/nostr.md); "envelope": always one event per subject; "batch": always one event per batch (RFC 6962 root).' },
  { key: 'nostr.relays', type: { kind: 'url-list', protocols: ['ws:', 'wss:'] }, default: ['wss://relay.damus.io', 'wss://nos.lol', 'wss://relay.nostr.band'], env: 'AER1_NOSTR_RELAYS', doc: 'Relays to publish to (comma-separated in the environment).' },
  { key: 'nostr.quorum', type: int(0, 100), default: 0, env: 'AER1_NOSTR_QUORUM', doc: 'Relays that must accept before the witness is confirmed; 0 means a majority, floor(n/2)+1 (not all: one relay refusing or down for good would keep every subject short of confirmed). Set it to the relay count to require all.' },
  { key: 'nostr.kind', type: int(1000, 9999), default: 3099, env: 'AER1_NOSTR_KIND', doc: 'Event kind (a regular, stored kind).' },
  { key: 'nostr.keyFile', type: { kind: 'string' }, default: './var/nostr.key', env: 'AER1_NOSTR_KEY_FILE', doc: 'Signing key file (hex or nsec, mode 0600); created on first start when missing.' },
  { key: 'nostr.keyEnv', type: { kind: 'string' }, default: 'AER1_NOSTR_SECRET_KEY', env: 'AER1_NOSTR_KEY_ENV', doc: 'Name of the environment variable that may hold the signing key instead of the file.' },
  { key: 'nostr.publishTimeoutMs', type: int(100, 120_000), default: 8000, env: 'AER1_NOSTR_PUBLISH_TIMEOUT_MS', doc: 'Deadline of one publish on one relay.' },
  { key: 'nostr.ratePerMinute', type: int(1, 100_000), default: 6, env: 'AER1_NOSTR_RATE_PER_MINUTE', doc: 'Events per minute sent to each relay (public relays accept a handful per key).' },
  { key: 'nostr.maxAttempts', type: int(1, 1000), default: 20, env: 'AER1_NOSTR_MAX_ATTEMPTS', doc: 'Attempts per relay and event for retryable failures before that relay is marked failed.' },
  { key: 'nostr.backoffMs', type: int(10, MS_DAY), default: 5000, env: 'AER1_NOSTR_BACKOFF_MS', doc: 'First retry delay; doubles per attempt.' },
  { key: 'nostr.backoffMaxMs', type: int(10, MS_DAY), default: 600_000, env: 'AER1_NOSTR_BACKOFF_MAX_MS', doc: 'Cap of the retry delay.' },
  { key: 'nostr.rateLimitBackoffMs', type: int(10, MS_DAY), default: 10_000, env: 'AER1_NOSTR_RATE_LIMIT_BACKOFF_MS', doc: 'A "rate-limited:" answer pauses that relay\'s whole queue this long (doubling while the relay keeps answering so, up to nostr.backoffMaxMs); the event is sent again without spending an attempt.' },
  { key: 'nostr.powMaxDifficulty', type: int(0, 64), default: 24, env: 'AER1_NOSTR_POW_MAX_DIFFICULTY', doc: 'Most NIP-13 proof of work (leading zero bits) mined for a relay that asks (NIP-11 min_pow_difficulty or a "pow:" answer naming it); a relay asking more is marked failed for the event. Each bit doubles the work.' },
  { key: 'nostr.powBudgetMs', type: int(10, MS_DAY), default: 120_000, env: 'AER1_NOSTR_POW_BUDGET_MS', doc: 'Longest time spent mining one event\'s proof of work for one relay (in slices, off the intake path); over it that relay is marked failed for the event.' },
  { key: 'nostr.relayInfoTtlMs', type: int(1000, MS_DAY), default: 3_600_000, env: 'AER1_NOSTR_RELAY_INFO_TTL_MS', doc: 'How long a relay\'s NIP-11 document (its stated limits) is kept before it is fetched again.' },
  { key: 'nostr.readBack', type: { kind: 'bool' }, default: false, env: 'AER1_NOSTR_READ_BACK', doc: 'After acceptance, read the event back by id and mark the relay "stored" when the bytes match.' },
  { key: 'nostr.nip03', type: { kind: 'bool' }, default: true, env: 'AER1_NOSTR_NIP03', doc: 'Envelope and auto mode with OTS on: each OTS batch also commits to the event ids of its subjects that have their own event (same single calendar submission), and once Bitcoin confirms a kind-1040 NIP-03 attestation per event is published to the relays.' },
  { key: 'nostr.batchMaxSize', type: int(1, 1_000_000), default: 10_000, env: 'AER1_NOSTR_BATCH_MAX_SIZE', doc: 'Batch and auto mode: most subjects per cut (per batch event).' },
  { key: 'nostr.batchWindowMs', type: int(10, MS_DAY), default: 10_000, env: 'AER1_NOSTR_BATCH_WINDOW_MS', doc: 'Batch and auto mode: longest a subject waits for its cut (and, in auto mode, the decision).' },
  { key: 'nostr.autoHorizonMs', type: int(1000, MS_DAY), default: 60_000, env: 'AER1_NOSTR_AUTO_HORIZON_MS', doc: 'Auto mode: the window of the rate budget (nostr.ratePerMinute × this / 60 s events, at least one) that per-subject events, the slowest relay\'s backlog and the events queued within it must fit in.' },
  { key: 'nostr.concurrency', type: int(1, 1000), default: 16, env: 'AER1_NOSTR_CONCURRENCY', doc: 'Publishes in flight per relay.' },

  { key: 'ots.enabled', type: { kind: 'bool' }, default: true, env: 'AER1_OTS_ENABLED', doc: 'Timestamp batch roots with OpenTimestamps calendars.' },
  { key: 'ots.calendars', type: { kind: 'url-list', protocols: ['http:', 'https:'] }, default: ['https://a.pool.opentimestamps.org', 'https://b.pool.opentimestamps.org', 'https://a.pool.eternitywall.com', 'https://ots.btc.catallaxy.com'], env: 'AER1_OTS_CALENDARS', doc: 'Calendar submit URLs (path prefixes kept).' },
  { key: 'ots.minCalendars', type: int(1, 100), default: 2, env: 'AER1_OTS_MIN_CALENDARS', doc: 'm: calendars that must answer for a batch to be pending (else partial, retried).' },
  { key: 'ots.timeoutMs', type: int(100, 300_000), default: 10_000, env: 'AER1_OTS_TIMEOUT_MS', doc: 'Deadline of one calendar request.' },
  { key: 'ots.batchMaxSize', type: int(1, 10_000_000), default: 100_000, env: 'AER1_OTS_BATCH_MAX_SIZE', doc: 'Most subjects per calendar submission.' },
  { key: 'ots.batchWindowMs', type: int(10, MS_DAY), default: 10_000, env: 'AER1_OTS_BATCH_WINDOW_MS', doc: 'Longest a subject waits for its batch.' },
  { key: 'ots.submitBackoffMs', type: int(10, MS_DAY), default: 10_000, env: 'AER1_OTS_SUBMIT_BACKOFF_MS', doc: 'First retry delay of a submission below m; doubles, capped by ots.upgradeMaxMs.' },
  { key: 'ots.upgradeInitialMs', type: int(10, MS_DAY), default: 300_000, env: 'AER1_OTS_UPGRADE_INITIAL_MS', doc: 'First upgrade poll after submission; doubles per poll.' },
  { key: 'ots.upgradeMaxMs', type: int(10, MS_DAY), default: 3_600_000, env: 'AER1_OTS_UPGRADE_MAX_MS', doc: 'Cap of the upgrade poll interval.' },
  { key: 'ots.upgradeGiveUpMs', type: int(1000, 365 * MS_DAY), default: 14 * MS_DAY, env: 'AER1_OTS_UPGRADE_GIVE_UP_MS', doc: 'A calendar still pending after this long is given up on (the others keep going).' },
  { key: 'ots.network', type: { kind: 'enum', values: ['mainnet', 'regtest'] }, default: 'mainnet', env: 'AER1_OTS_NETWORK', doc: 'Bitcoin network whose proof-of-work rules headers must meet.' },
  { key: 'ots.headersFile', type: { kind: 'optional-string' }, default: null, env: 'AER1_OTS_HEADERS_FILE', doc: 'Header source: JSON file {"<height>": "<80-byte header hex>"}.' },
  { key: 'ots.esploraUrl', type: { kind: 'optional-url', protocols: ['http:', 'https:'] }, default: 'https://blockstream.info/api', env: 'AER1_OTS_ESPLORA_URL', doc: 'Header source: Esplora-style API (used when no headers file or bitcoind is set).' },
  { key: 'ots.bitcoindUrl', type: { kind: 'optional-url', protocols: ['http:', 'https:'] }, default: null, env: 'AER1_OTS_BITCOIND_URL', doc: 'Header source: bitcoind JSON-RPC URL (user:password@ in the URL).' },

  { key: 'http.enabled', type: { kind: 'bool' }, default: true, env: 'AER1_HTTP_ENABLED', doc: 'Serve the status API, events, metrics and the status page.' },
  { key: 'http.host', type: { kind: 'string' }, default: '127.0.0.1', env: 'AER1_HTTP_HOST', doc: 'Address to bind (loopback by default).' },
  { key: 'http.port', type: int(0, 65535), default: 8787, env: 'AER1_HTTP_PORT', doc: 'Port to bind (0: any free port).' },
  { key: 'http.token', type: { kind: 'optional-string' }, default: null, env: 'AER1_HTTP_TOKEN', doc: 'Bearer token for POST /v1/anchors (and for reads when http.readsRequireToken). Unset: POST is refused.' },
  { key: 'http.readsRequireToken', type: { kind: 'bool' }, default: false, env: 'AER1_HTTP_READS_REQUIRE_TOKEN', doc: 'Require the token for every read endpoint too (not /livez, /readyz).' },
  { key: 'http.maxBodyBytes', type: int(1024, 64 * 1024 * 1024), default: 4 * 1024 * 1024, env: 'AER1_HTTP_MAX_BODY_BYTES', doc: 'Largest request body accepted.' },
  { key: 'http.redisTimeoutMs', type: int(100, 60_000), default: 2500, env: 'AER1_HTTP_REDIS_TIMEOUT_MS', doc: 'Longest a request waits on Redis; past it, or while Redis is unreachable or refuses writes, the answer is 503 with Retry-After.' },
  { key: 'http.allowedHosts', type: { kind: 'host-list' }, default: ['localhost', '127.0.0.1', '[::1]'], env: 'AER1_HTTP_ALLOWED_HOSTS', doc: 'Host header names answered (any port), besides http.host when it is not a wildcard; others get 421 (DNS rebinding). "*" answers any.' },
  { key: 'http.maxLiveClients', type: int(1, 100_000), default: 256, env: 'AER1_HTTP_MAX_LIVE_CLIENTS', doc: 'Most SSE and WebSocket clients at once; one more gets 503 with Retry-After.' },
  { key: 'http.maxReplay', type: int(1, 1_000_000), default: 1000, env: 'AER1_HTTP_MAX_REPLAY', doc: 'Most stream entries replayed to one connection after Last-Event-ID or ?since=; with more left, the stream ends and the client resumes from its last id.' },

  { key: 'webhooks', type: { kind: 'webhooks' }, default: [], env: 'AER1_WEBHOOKS', doc: 'POST every state change to these: [{"url", "secret", "headers"?}] (JSON in the environment). URLs with user:password@ are refused: put credentials in "headers".' },
  { key: 'webhookDelivery.retryHorizonMs', type: int(0, 30 * MS_DAY), default: 3 * MS_DAY, env: 'AER1_WEBHOOK_RETRY_HORIZON_MS', doc: 'A change is retried until delivered or this long after it was made (then recorded failed); attempts are computed so the capped backoff lasts this long.' },
  { key: 'webhookDelivery.backoffMs', type: int(10, MS_DAY), default: 1000, env: 'AER1_WEBHOOK_BACKOFF_MS', doc: 'First retry delay after a failed delivery; doubles per attempt, +0–20% jitter. The hook\'s queue pauses meanwhile, so its changes stay in order.' },
  { key: 'webhookDelivery.backoffMaxMs', type: int(10, MS_DAY), default: 60_000, env: 'AER1_WEBHOOK_BACKOFF_MAX_MS', doc: 'Cap of the retry delay (+20% jitter): a receiver back up gets its backlog within about this long.' },
  { key: 'webhookDelivery.timeoutMs', type: int(100, 300_000), default: 10_000, env: 'AER1_WEBHOOK_TIMEOUT_MS', doc: 'Deadline of one POST (an answer after it counts as a failure).' },
  { key: 'webhookDelivery.concurrency', type: int(1, 100), default: 1, env: 'AER1_WEBHOOK_CONCURRENCY', doc: 'POSTs in flight per hook, across every daemon; 1 keeps each hook\'s changes in order, more may reorder them.' },

  { key: 'log.level', type: { kind: 'enum', values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] }, default: 'info', env: 'AER1_LOG_LEVEL', doc: 'Log level (pino).' },
  { key: 'log.format', type: { kind: 'enum', values: ['auto', 'json', 'pretty'] }, default: 'auto', env: 'AER1_LOG_FORMAT', doc: 'auto: human-readable lines when stderr is a terminal, JSON lines otherwise (pipe, file, journald, docker logs); json or pretty force one.' },
];
