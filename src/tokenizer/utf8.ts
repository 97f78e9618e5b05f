// UTF-8 to text for large inputs (tokenizer.json, the fast form's vocabulary). workerd's
// TextDecoder converts non-ASCII text through ICU: about 1.5 s for Qwen3's 11 MB tokenizer.json
// on a loaded machine, against about 0.05 s for Response.text(), which V8 decodes. Response.text()
// replaces invalid bytes with U+FFFD instead of refusing them, so text holding U+FFFD (rare, and
// legitimate in some vocabularies) is decoded again by the strict decoder to tell which.

/** The bytes as text; undefined when they are not valid UTF-8. A leading BOM is dropped. */
export async function decodeUtf8(bytes: Uint8Array): Promise<string | undefined> {
  const text = await new Response(bytes as Uint8Array<ArrayBuffer>).text();
  if (!text.includes("\uFFFD")) return text;
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return undefined;
  }
}
