// Marker search shared by the formats: where the next marker starts, or where a marker may be
// starting at the end of the text seen so far (that tail is held back, never sent as content).

/** Length of the longest tail of `text` that is a proper prefix of one of `markers`. */
export function partialMarkerTail(text: string, markers: readonly string[]): number {
  let best = 0;
  for (const m of markers) {
    const max = Math.min(m.length - 1, text.length);
    for (let n = max; n > best; n--) {
      if (text.endsWith(m.slice(0, n))) {
        best = n;
        break;
      }
    }
  }
  return best;
}

/** The first full occurrence of any marker at or after `from`: its index and the marker. */
export function firstMarker(text: string, markers: readonly string[], from = 0): { at: number; marker: string } | undefined {
  let found: { at: number; marker: string } | undefined;
  for (const marker of markers) {
    const at = text.indexOf(marker, from);
    if (at >= 0 && (found === undefined || at < found.at)) found = { at, marker };
  }
  return found;
}

/** How much of `text` is surely plain text: up to the first marker, or (with no marker) all
 *  but a tail that may be a marker's start (all of it once the output is final). */
export function plainPrefix(text: string, markers: readonly string[], final: boolean): number {
  const hit = firstMarker(text, markers);
  if (hit) return hit.at;
  return final ? text.length : text.length - partialMarkerTail(text, markers);
}

export function skipWhitespace(text: string, i: number): number {
  while (i < text.length && /\s/.test(text[i]!)) i++;
  return i;
}
