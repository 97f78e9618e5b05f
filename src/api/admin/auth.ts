// Admin API authentication: `Authorization: Bearer <ADMIN_TOKEN>`. The comparison hashes both
// sides and compares the digests in constant time, so neither the token's content nor its
// length leaks through response timing.

/** The token of a `Bearer` Authorization header (scheme case-insensitive), else undefined. Pure. */
export function bearerToken(header: string | null | undefined): string | undefined {
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return m ? m[1] : undefined;
}

/** Constant-time equality of two equal-length byte arrays (the fallback where
 *  crypto.subtle.timingSafeEqual, a workerd extension, is missing). Pure. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  let diff = 0;
  for (let i = 0; i < a.byteLength; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

export async function tokenMatches(given: string, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all([sha256(given), sha256(expected)]);
  const subtle = crypto.subtle as SubtleCrypto & { timingSafeEqual?: (x: ArrayBufferView, y: ArrayBufferView) => boolean };
  return typeof subtle.timingSafeEqual === "function" ? subtle.timingSafeEqual(a, b) : constantTimeEqual(a, b);
}
