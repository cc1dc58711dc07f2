/** NIP-01 request filters as this project sends them. */

/** The largest `limit` a query may ask for (strfry's default cap is 500; others allow more). */
export const MAX_QUERY_LIMIT = 5000;

/** One NIP-01 filter, as `query` takes it (`#i`, `#t`, `#x` for the tags this project writes). */
export interface RelayQueryFilter {
  ids?: string[];
  authors?: string[];
  kinds?: number[];
  '#i'?: string[];
  '#t'?: string[];
  '#x'?: string[];
  since?: number;
  until?: number;
  limit?: number;
}
