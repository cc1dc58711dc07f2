/**
 * An answer's body read with a cap, for the clients that talk to witnesses over HTTP
 * (calendars, timestamp authorities, C2SP witnesses): a declared length over the cap is
 * refused before reading, a streamed one as soon as it passes the cap.
 */

/**
 * Reads `res`'s body, at most `maxBytes`. Over the cap: the body is cancelled and
 * `tooLarge('(Content-Length N)' | '(streamed)')` thrown; a failed read throws `fail(err)`
 * (given the tooLarge error too, so a client passes its own typed errors through).
 */
export async function readBoundedBody(
  res: Response,
  maxBytes: number,
  tooLarge: (what: string) => Error,
  fail: (err: unknown) => Error,
): Promise<Buffer> {
  const declared = res.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    throw tooLarge(`(Content-Length ${declared})`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  if (res.body) {
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        total += value.length;
        if (total > maxBytes) {
          const err = tooLarge('(streamed)');
          await reader.cancel().catch(() => undefined);
          throw err;
        }
        chunks.push(Buffer.from(value));
      }
    } catch (err) {
      throw fail(err);
    }
  }
  return Buffer.concat(chunks, total);
}
