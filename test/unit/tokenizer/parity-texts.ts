// Texts for the tokenizer parity suite: hand-picked cases for the pre-tokenizer regex's corners
// (contractions, digit runs, whitespace runs, CRLF, letters vs marks, non-BMP characters, the
// model's special-token strings) plus seeded combinations of fragments. Deterministic.

const CURATED: string[] = [
  "", " ", "  ", "\n", "\r\n", "\t", "a", "Hello world", "Hello, world!", " leading space",
  "trailing space ", "multiple   spaces   inside", "tabs\tand\ttabs", "\t\t\tindented",
  "line1\nline2\n\nline4\n\n\n", "crlf\r\nline\r\n\r\nend\r\n", "mixed\r\n\n\r\r\n", "\u000b\f vertical tab and form feed",
  "don't can't won't I'm you're we've they'll he'd", "DON'T CAN'T I'M", "it's 'quoted' text", "rock 'n' roll",
  "1", "12", "123", "1234", "12345678901234567890", "3.14159", "-42", "1,000,000", "0x1F 0b1010 1e-07 1.0",
  "2024-01-15T10:30:00Z", "v1.2.3-beta+build.5", "$100.00 €50 £20 ¥1000",
  "def f(x):\n    return x ** 2\n", "function add(a, b) {\n  return a + b;\n}\n",
  "#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); return 0; }",
  "SELECT * FROM users WHERE id = 1;", "<div class=\"a\">text</div>", "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
  "    if (x) {\n        y();\n    }\n", "a = b  +  c   *   d", "x=>x*2", "foo_bar_baz fooBarBaz FOO_BAR",
  "https://example.com/path?q=1&r=2#frag", "user@example.com", "C:\\Windows\\System32", "~/projects/repo/.git",
  "😀", "😀😀😀", "👍🏽", "👨‍👩‍👧‍👦 family", "🇯🇵🇺🇸 flags", "emoji at end 🎉", "🎉 at start", "mixed😀text😀mixed",
  "中文测试", "你好，世界！", "日本語のテキストです。", "한국어 텍스트", "繁體中文與简体中文", "𠀀𠀁 rare CJK ext B",
  "مرحبا بالعالم", "שלום עולם", "English مع العربية mixed", "עברית with English",
  "Ελληνικά κείμενο", "Русский текст здесь", "हिन्दी पाठ", "ภาษาไทย", "Tiếng Việt có dấu",
  "café naïve résumé", "e\u0301 combining acute", "ﬁ ligature", "Å vs A\u030a", "ß ẞ", "İstanbul ı",
  "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n",
  "<think>\nreasoning\n</think>\n\nanswer", "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
  "text<|im_end|>text", "<|im_start|><|im_end|><|endoftext|>", "<|fake_token|>", "< |im_end| >",
  "<|vision_start|><|image_pad|><|vision_end|>", "<tool_response>\nok\n</tool_response>",
  "\u00a0non-breaking\u00a0space", "zero\u200bwidth", "\ufeffBOM", "\u3000ideographic space", "soft\u00adhyphen",
  "\u0000null char", "\u001fcontrol", "replacement \ufffd char", "a\u2028b\u2029c",
  "!!!???...", "---===+++", "......", "…", "“smart quotes” ‘single’", "«guillemets»", "·•‣",
  "ALL CAPS SENTENCE HERE", "MiXeD CaSe", "camelCaseIdentifier", "snake_case_identifier", "kebab-case-identifier",
  "a\nb\nc\nd\ne\nf", "   \n   \n   ", "\n\n\n\n\n\n\n\n", "                                ",
];

const FRAGMENTS = [
  "the", " quick", " brown", " fox", "\n", "\r\n", "  ", "\t", "123", "4567", "'s", "'ll", "😀", "中文", "مرحبا",
  "<|im_end|>", "<|im_start|>", "{", "}", "()", " =>", "éè", "ß", "    ", "\n\n", "日本", "👍🏽", "x", "_", "--",
  " 3.5", "1e-07", "ünïcödé", "Ωμέγα", "הלו", "🇯🇵", "\u200b", "\u00a0", ".", ",", "?", "!", "\"", "`", "def ", "return",
];

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function combined(count: number, seed: number): string[] {
  const rnd = mulberry32(seed);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const len = 1 + Math.floor(rnd() * 24);
    let s = "";
    for (let j = 0; j < len; j++) s += FRAGMENTS[Math.floor(rnd() * FRAGMENTS.length)];
    out.push(s);
  }
  return out;
}

function longInputs(): string[] {
  const para = "The gateway tokenizes at the edge. 边缘分词。 Código 😀 \r\n\tindent 12345 don't <|im_end|> ";
  return [para.repeat(50), "x".repeat(5000), " ".repeat(3000), "😀".repeat(800), "9".repeat(2000), "ab\n".repeat(1500)];
}

export const PARITY_TEXTS: readonly string[] = [...CURATED, ...combined(140, 14), ...longInputs()];
