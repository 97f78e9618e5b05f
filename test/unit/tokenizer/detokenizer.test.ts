// Incremental detokenization with the real Qwen3 tokenizer: split UTF-8 characters, special
// tokens, stop strings across deltas, n sequences.
import { beforeAll, describe, expect, it } from "vitest";
import { Detokenizer, SequenceDetokenizer, type DetokenizerOptions } from "../../../src/tokenizer/detokenizer.js";
import type { EdgeTokenizer } from "../../../src/tokenizer/tokenizer.js";
import { qwen3Tokenizer } from "./qwen3-files.js";

let tok: EdgeTokenizer;
beforeAll(async () => {
  tok = await qwen3Tokenizer();
});

/** Feeds ids in slices of `step`, returning every delta and the finish text. */
function run(ids: number[], options: DetokenizerOptions = {}, step = 1) {
  const d = new SequenceDetokenizer(tok, options);
  const deltas: string[] = [];
  let matched: string | undefined;
  for (let i = 0; i < ids.length; i += step) {
    const s = d.push(ids.slice(i, i + step));
    deltas.push(s.text);
    matched ??= s.matchedStop;
  }
  const f = d.finish();
  deltas.push(f.text);
  matched ??= f.matchedStop;
  return { deltas, text: deltas.join(""), matched, output: d.output };
}

const SPLIT_TEXTS = ["😀 hi 👍🏽 👨‍👩‍👧‍👦", "边缘分词：龘靐齉", "𠀀𠀁𠀂 rare", "🇯🇵🇺🇸", "mixed 😀中文 and 🎉 end", "ẞ ǅ ₿ ⚙️"];

describe("SequenceDetokenizer: split UTF-8", () => {
  it("the test texts really split characters across byte-level tokens", () => {
    const splits = SPLIT_TEXTS.flatMap((t) => tok.encode(t, { addSpecialTokens: false })).filter((id) => tok.decode([id]).includes("\ufffd"));
    expect(splits.length).toBeGreaterThan(5);
  });

  for (const text of SPLIT_TEXTS) {
    it(`never emits U+FFFD and reassembles ${JSON.stringify(text)}`, () => {
      const ids = tok.encode(text, { addSpecialTokens: false });
      for (const step of [1, 2, 3]) {
        const r = run(ids, {}, step);
        expect(r.deltas.filter((d) => d.includes("\ufffd"))).toEqual([]);
        expect(r.text).toBe(text);
      }
    });
  }

  it("flushes an incomplete final character as decode() does", () => {
    const ids = tok.encode("ok 😀", { addSpecialTokens: false });
    const cut = ids.slice(0, -1);
    const r = run(cut);
    expect(r.text).toBe(tok.decode(cut));
    expect(r.deltas.slice(0, -1).join("")).not.toContain("\ufffd");
  });
});

describe("SequenceDetokenizer: special tokens", () => {
  const ids = () => [...tok.encode("Hello there", { addSpecialTokens: false }), 151645, 151643];

  it("skips special tokens by default", () => {
    expect(run(ids()).text).toBe("Hello there");
  });

  it("keeps them with skipSpecialTokens: false", () => {
    expect(run(ids(), { skipSpecialTokens: false }).text).toBe("Hello there<|im_end|><|endoftext|>");
  });
});

describe("SequenceDetokenizer: stop strings", () => {
  const ids = () => tok.encode("The answer is 42. END of story. More text", { addSpecialTokens: false });

  it("cuts before the stop string and reports it", () => {
    const r = run(ids(), { stop: ["END"] });
    expect(r.text).toBe("The answer is 42. ");
    expect(r.matched).toBe("END");
  });

  it("includes it with includeStopStrInOutput", () => {
    const r = run(ids(), { stop: ["END"], includeStopStrInOutput: true });
    expect(r.text).toBe("The answer is 42. END");
    expect(r.matched).toBe("END");
  });

  it("holds back a partial match across deltas and never leaks part of the stop string", () => {
    // "42. END" arrives token by token; "4", "42", "42." are prefixes of the stop string.
    const r = run(ids(), { stop: ["42. END"] });
    expect(r.text).toBe("The answer is ");
    for (const d of r.deltas) expect(d).not.toMatch(/42/);
  });

  it("releases held-back text once the partial match fails", () => {
    const r = run(tok.encode("a 42. ENDING? no: 42 then", { addSpecialTokens: false }), { stop: ["42. STOP"] });
    expect(r.text).toBe("a 42. ENDING? no: 42 then");
    expect(r.matched).toBeUndefined();
  });

  it("matches a stop string inside a single token and across token boundaries", () => {
    const text = "alphabet soup";
    const r1 = run(tok.encode(text, { addSpecialTokens: false }), { stop: ["phab"] });
    expect(r1.text).toBe("al");
    const r2 = run(tok.encode(text, { addSpecialTokens: false }), { stop: ["et so"] });
    expect(r2.text).toBe("alphab");
  });

  it("stops at the first stop string completed; on the same token, list order decides, as in vLLM", () => {
    // Qwen3 splits digits, so "42." and "2." both complete on the "." token.
    expect(run(ids(), { stop: ["story", "answer"] })).toMatchObject({ matched: "answer", text: "The " });
    expect(run(ids(), { stop: ["42.", "2."] })).toMatchObject({ matched: "42.", text: "The answer is " });
    expect(run(ids(), { stop: ["2.", "42."] })).toMatchObject({ matched: "2.", text: "The answer is 4" });
  });

  it("ignores tokens after the stop and a stop string made of an emoji's split bytes", () => {
    const e = tok.encode("hi 😀 there", { addSpecialTokens: false });
    const d = new SequenceDetokenizer(tok, { stop: ["😀"] });
    const out = e.map((id) => d.push([id]).text).join("") + d.finish().text;
    expect(out).toBe("hi ");
    expect(d.matchedStop).toBe("😀");
    expect(d.push(e).text).toBe("");
  });

  it("emits nothing past a stop even within one multi-token push", () => {
    const d = new SequenceDetokenizer(tok, { stop: ["END"] });
    const s = d.push(ids());
    expect(s).toMatchObject({ text: "The answer is 42. ", matchedStop: "END" });
  });

  it("reports how many tokens the sequence had when the stop matched, whatever the push size", () => {
    const all = ids();
    // The token that completes "42." (Qwen3 splits digits, so "." is its own token).
    const k = all.findIndex((_, i) => tok.decode(all.slice(0, i + 1)).includes("42.")) + 1;
    expect(k).toBeGreaterThan(1);
    for (const step of [1, 2, 3, all.length]) {
      const d = new SequenceDetokenizer(tok, { stop: ["42."] });
      let at: number | undefined;
      for (let i = 0; i < all.length && at === undefined; i += step) at = d.push(all.slice(i, i + step)).tokensAtStop;
      expect(at, `step ${step}`).toBe(k);
    }
  });
});

describe("Detokenizer: n sequences", () => {
  it("keeps one state per index", () => {
    const d = new Detokenizer(tok);
    const a = tok.encode("😀 first", { addSpecialTokens: false });
    const b = tok.encode("中文 second", { addSpecialTokens: false });
    let ta = "";
    let tb = "";
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (i < a.length) ta += d.push(0, [a[i]!]).text;
      if (i < b.length) tb += d.push(1, [b[i]!]).text;
    }
    ta += d.finish(0).text;
    tb += d.finish(1).text;
    expect([ta, tb]).toEqual(["😀 first", "中文 second"]);
  });
});
