// Analytics Engine's per-point limits and the truncation that keeps every point inside them.
// Limits as documented (developers.cloudflare.com/analytics/analytics-engine/limits, 2026-04):
// up to 20 blobs totalling 16 KB, 20 doubles, one index of at most 96 bytes, and 250
// writeDataPoint calls per invocation. Sizes are UTF-8 bytes, not UTF-16 code units, so a model
// name in CJK can hit the index limit at 32 characters. Over-long values are cut, never
// dropped and never thrown: a data point with a shortened engine name is still worth having.
import { utf8Length } from "../core/utf8.js";

export const MAX_BLOBS = 20;
export const MAX_DOUBLES = 20;
export const MAX_INDEX_BYTES = 96;
/** "16 KB" read conservatively (16,000 rather than 16,384) so either reading holds. */
export const MAX_BLOB_BYTES_TOTAL = 16_000;
export const MAX_POINTS_PER_INVOCATION = 250;

/** Marks a cut value so a dashboard shows it was shortened (3 bytes in UTF-8). */
export const TRUNCATION_MARK = "\u2026";
const MARK_BYTES = 3;

function codePointBytes(cp: number): number {
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  // Lone surrogates are encoded as U+FFFD (3 bytes), like TextEncoder does.
  if (cp < 0x10000) return 3;
  return 4;
}


/** `s` if it fits in `maxBytes` of UTF-8, else its longest prefix on a code-point boundary
 *  that fits together with the truncation mark. */
export function truncateUtf8(s: string, maxBytes: number): string {
  // Fast path: every UTF-16 code unit is at most 3 UTF-8 bytes.
  if (s.length * 3 <= maxBytes || utf8Length(s) <= maxBytes) return s;
  const mark = maxBytes >= MARK_BYTES ? TRUNCATION_MARK : "";
  const room = maxBytes - (mark ? MARK_BYTES : 0);
  let used = 0;
  let end = 0;
  for (const ch of s) {
    const b = codePointBytes(ch.codePointAt(0)!);
    if (used + b > room) break;
    used += b;
    end += ch.length;
  }
  return s.slice(0, end) + mark;
}

/** Shortens the longest blobs, and only those, until the total fits the budget: the largest
 *  per-blob cap that fits ("water filling"), so short labels (version, event type, enums)
 *  are never touched and one huge value cannot crowd out the rest. */
export function fitBlobs(blobs: string[], budget: number = MAX_BLOB_BYTES_TOTAL): string[] {
  // Fast path, no UTF-8 measuring: a UTF-16 code unit is at most 3 UTF-8 bytes.
  let units = 0;
  for (const b of blobs) units += b.length;
  if (units * 3 <= budget) return blobs;
  const sizes = blobs.map(utf8Length);
  let total = 0;
  for (const s of sizes) total += s;
  if (total <= budget) return blobs;
  const ascending = [...sizes].sort((a, b) => a - b);
  let remaining = budget;
  let cap = 0;
  for (let i = 0; i < ascending.length; i++) {
    const share = Math.floor(remaining / (ascending.length - i));
    if (ascending[i]! > share) {
      cap = share;
      break;
    }
    remaining -= ascending[i]!;
  }
  return blobs.map((b, i) => (sizes[i]! > cap ? truncateUtf8(b, cap) : b));
}
