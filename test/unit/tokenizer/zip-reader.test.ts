// The ZIP reader (zip-reader.ts): stored and deflate entries as fflate wrote them, directories
// skipped; an entry inflating past its declared size, a damaged directory, an unknown method and
// bytes that are no ZIP are refused (the bundle loader maps them to not_a_zip).
import { describe, expect, it } from "vitest";
import { strToU8, zipSync } from "fflate";
import { zipEntries, zipEntryBytes, ZipFormatError } from "../../../src/tokenizer/zip-reader.js";

const text = "tokenizer ".repeat(50_000);
const zip = zipSync({ "dir/a.json": strToU8(text), "b.txt": [strToU8("stored"), { level: 0 }], "empty/": new Uint8Array(0) });

describe("zip reader", () => {
  it("lists files (not directories) and reads deflate and stored entries", async () => {
    const entries = zipEntries(zip);
    expect(entries.map((e) => [e.name, e.method])).toEqual([["dir/a.json", 8], ["b.txt", 0]]);
    expect(new TextDecoder().decode(await zipEntryBytes(zip, entries[0]!))).toBe(text);
    expect(new TextDecoder().decode(await zipEntryBytes(zip, entries[1]!))).toBe("stored");
  });

  it("an entry that inflates to more or less than it declared is refused", async () => {
    const [e] = zipEntries(zip);
    await expect(zipEntryBytes(zip, { ...e!, size: 1000 })).rejects.toThrow(/inflates to more than its declared 1000 bytes/);
    await expect(zipEntryBytes(zip, { ...e!, size: text.length + 10 })).rejects.toThrow(/inflates to 500000 bytes, not its declared 500010/);
  });

  it("corrupt deflate data, an unknown method, a damaged directory, no ZIP: ZipFormatError", async () => {
    const [e] = zipEntries(zip);
    const broken = zip.slice();
    broken.fill(0xff, e!.offset + 40, e!.offset + 200);
    await expect(zipEntryBytes(broken, e!)).rejects.toBeInstanceOf(ZipFormatError);
    await expect(zipEntryBytes(zip, { ...e!, method: 12 })).rejects.toThrow(/method 12 is not supported/);
    expect(() => zipEntries(strToU8("not a zip at all, not at all"))).toThrow(ZipFormatError);
    const noDir = zip.slice();
    const view = new DataView(noDir.buffer);
    view.setUint32(noDir.length - 22 + 16, 1, true); // central directory offset pointing at data
    expect(() => zipEntries(noDir)).toThrow(ZipFormatError);
  });
});
