// A small ZIP reader for tokenizer bundles: the central directory read in JavaScript, each
// wanted entry inflated by the runtime's own DecompressionStream("deflate-raw") (native code in
// workerd and Node; a JavaScript inflate spent about 0.2 s of a cold load on Qwen3's 11 MB
// tokenizer.json). Stored (0) and deflate (8) entries only; no ZIP64, no encryption: what
// `zip`, Python's zipfile and the upstream servicer write for a tokenizer directory.
// Sizes come from the central directory (a data descriptor after the data does not matter),
// and no entry may inflate to more than it declared: the ZIP-bomb guard is the declared sum.

export class ZipFormatError extends Error {
  override readonly name = "ZipFormatError";
}

/** An entry of the central directory. */
export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  /** Offset of the entry's local header. */
  offset: number;
}

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
/** The end record (22 bytes) plus the longest comment a ZIP can carry. */
const EOCD_SEARCH = 22 + 0xffff;

/** The central directory's entries (directories left out). */
export function zipEntries(zip: Uint8Array): ZipEntry[] {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  let end = -1;
  for (let at = zip.length - 22; at >= Math.max(0, zip.length - EOCD_SEARCH); at--) {
    if (view.getUint32(at, true) === EOCD) {
      end = at;
      break;
    }
  }
  if (end < 0) throw new ZipFormatError("no end of central directory record");
  const count = view.getUint16(end + 10, true);
  const dirSize = view.getUint32(end + 12, true);
  let at = view.getUint32(end + 16, true);
  if (count === 0xffff || at === 0xffffffff || at + dirSize > end) throw new ZipFormatError("ZIP64 or a damaged central directory is not supported");
  const names = new TextDecoder();
  const out: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (at + 46 > end || view.getUint32(at, true) !== CENTRAL) throw new ZipFormatError(`central directory entry ${i} is damaged`);
    const flags = view.getUint16(at + 8, true);
    const method = view.getUint16(at + 10, true);
    const compressedSize = view.getUint32(at + 20, true);
    const size = view.getUint32(at + 24, true);
    const nameLen = view.getUint16(at + 28, true);
    const extraLen = view.getUint16(at + 30, true);
    const commentLen = view.getUint16(at + 32, true);
    const offset = view.getUint32(at + 42, true);
    const name = names.decode(zip.subarray(at + 46, at + 46 + nameLen));
    at += 46 + nameLen + extraLen + commentLen;
    if (name.endsWith("/")) continue;
    if (flags & 1) throw new ZipFormatError(`${name} is encrypted`);
    if (compressedSize === 0xffffffff || size === 0xffffffff || offset === 0xffffffff) throw new ZipFormatError(`${name} needs ZIP64`);
    out.push({ name, method, compressedSize, size, offset });
  }
  return out;
}

/** The entry's bytes: stored copied, deflate inflated natively; never more than declared. */
export async function zipEntryBytes(zip: Uint8Array, e: ZipEntry): Promise<Uint8Array> {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  if (e.offset + 30 > zip.length || view.getUint32(e.offset, true) !== LOCAL) throw new ZipFormatError(`${e.name}: no local header`);
  const start = e.offset + 30 + view.getUint16(e.offset + 26, true) + view.getUint16(e.offset + 28, true);
  if (start + e.compressedSize > zip.length) throw new ZipFormatError(`${e.name}: data past the end of the ZIP`);
  const data = zip.subarray(start, start + e.compressedSize);
  if (e.method === 0) {
    if (e.size !== e.compressedSize) throw new ZipFormatError(`${e.name}: stored entry with two sizes`);
    return data.slice();
  }
  if (e.method !== 8) throw new ZipFormatError(`${e.name}: compression method ${e.method} is not supported`);
  return inflateRaw(data, e.size, e.name);
}

async function inflateRaw(data: Uint8Array, size: number, name: string): Promise<Uint8Array> {
  const ds = new DecompressionStream("deflate-raw");
  const writer = ds.writable.getWriter();
  const written = writer.write(data as Uint8Array<ArrayBuffer>).then(() => writer.close());
  written.catch(() => undefined); // its failure shows on the readable side
  try {
    return await readExactly(ds.readable, size, name);
  } catch (err) {
    await ds.readable.cancel().catch(() => undefined);
    if (err instanceof ZipFormatError) throw err;
    throw new ZipFormatError(`${name} does not inflate (${(err as Error)?.message ?? String(err)})`);
  }
}

/** The stream's bytes, which must be `size`. workerd's streams take a BYOB reader, and fill the
 *  whole buffer in a read or two; a default reader gets 4-16 KiB per read (about 3 s of reads
 *  for Qwen3's tokenizer.json in workerd, measured). */
async function readExactly(stream: ReadableStream<Uint8Array>, size: number, name: string): Promise<Uint8Array> {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = stream.getReader({ mode: "byob" });
  } catch {
    // not a byte stream (Node's DecompressionStream): chunks as they come
  }
  const tooLarge = () => new ZipFormatError(`${name} inflates to more than its declared ${size} bytes`);
  const short = (at: number) => new ZipFormatError(`${name} inflates to ${at} bytes, not its declared ${size}`);
  if (byob) {
    // One spare byte: a stream still giving bytes past `size` is refused, not truncated.
    let buf = new Uint8Array(size + 1);
    let at = 0;
    for (;;) {
      const r = await byob.read(buf.subarray(at));
      // The read took the buffer over; its view (empty at the end) gives it back.
      if (r.value) buf = new Uint8Array(r.value.buffer);
      if (r.done) break;
      at += r.value.byteLength;
      if (at > size) throw tooLarge();
    }
    if (at !== size) throw short(at);
    return buf.subarray(0, size);
  }
  const out = new Uint8Array(size);
  let at = 0;
  const reader = stream.getReader();
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    if (at + r.value.length > size) throw tooLarge();
    out.set(r.value, at);
    at += r.value.length;
  }
  if (at !== size) throw short(at);
  return out;
}
