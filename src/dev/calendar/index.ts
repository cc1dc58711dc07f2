export {
  startDevCalendar,
  MAX_DIGEST_LENGTH,
  PENDING_REASON,
  NOT_FOUND_REASON,
  type DevCalendar,
  type DevCalendarBehaviour,
  type DevCalendarMode,
  type DevCalendarOptions,
  type DevCalendarStats,
  type MineResult,
} from './dev-calendar.js';
export { REGTEST_BITS, targetFromBits, meetsTarget, parseHeader, sha256d } from './block-header.js';
export { readHeadersFile, parseHeadersJson } from './headers-file.js';
export { startAutoMiner, type AutoMiner, type AutoMinerHooks } from './auto-miner.js';
