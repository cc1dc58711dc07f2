/**
 * The layout's rules, checked in `npm test` (test/docs/dependency-rules.test.ts):
 * src/core is pure (no adapter, no I/O module, no Redis/queue/socket library), src/dev
 * (dev witnesses, demo stack) is reached only from the CLI and tests, the witnesses know
 * neither the issuers' queue nor the intake stage, and no two folders depend on each other.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'core-imports-no-adapter',
      comment: 'src/core is the pure part the verifier runs on: it imports nothing from adapters, daemon wiring, dev witnesses or the CLI.',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: '^src/(adapters|daemon|dev|cli)/|^src/version\\.ts$' },
    },
    {
      name: 'core-does-no-io',
      comment: 'src/core does no I/O of its own: files, sockets, processes and HTTP are adapters.',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { dependencyTypes: ['core'], path: '^(node:)?(fs|fs/promises|net|http|https|http2|tls|dgram|dns|child_process|worker_threads|cluster|readline)$' },
    },
    {
      name: 'core-uses-no-service-client',
      comment: 'No Redis, queue, WebSocket, logging or metrics library in src/core.',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: 'node_modules/(ioredis|bullmq|ws|pino|prom-client)/' },
    },
    {
      name: 'dev-only-from-cli',
      comment: 'The dev witnesses and the demo stack are for the CLI (and tests), never for the daemon or the core.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(cli|dev)/' },
      to: { path: '^src/dev/' },
    },
    {
      name: 'witnesses-import-no-queue-or-intake',
      comment: 'The stages run job → intake → envelope → witnesses → state: a witness (nostr, ots, witness) takes its subjects from state, never from the issuers\' queue or the intake stage.',
      severity: 'error',
      from: { path: '^src/adapters/(nostr|ots|witness)/' },
      to: { path: '^src/adapters/(queue|intake)/' },
    },
    {
      name: 'no-folder-cycles',
      comment: 'Data flows one way: no two folders depend on each other, directly or around a loop.',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], extensions: ['.ts', '.js', '.json'] },
  },
};
