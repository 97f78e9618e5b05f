// Prompt length for the decider when the gateway has no token ids (OpenAI HTTP engines, text
// input on the VllmEngine surface): UTF-8 bytes / 4. BPE tokenizers of current open models
// average about 4 bytes per token on English and code, so the estimate is within about 25%
// there; on CJK text (3 bytes per character, often one token per character) it is about 25%
// low, and on long digit or whitespace runs it can be off by 2x. docs/pd.md says how to set
// a threshold with that in mind. Pure.

export function estimatePromptTokens(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c < 0xdc00) {
      bytes += 4; // a surrogate pair: one 4-byte character
      i++;
    } else bytes += 3;
  }
  return Math.ceil(bytes / 4);
}
