// UTF-8 byte length without encoding: bounds (prompt sizes, Analytics Engine blob limits) are
// in bytes, and encoding a large string only to measure it would cost a copy.

/** UTF-8 length of a string (a lone surrogate counts as U+FFFD's 3 bytes, as TextEncoder). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}
