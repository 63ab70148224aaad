import { Tiktoken } from 'js-tiktoken/lite';
import o200kBase from 'js-tiktoken/ranks/o200k_base';

let encoder: Tiktoken | undefined;

/** Tokens of a text with the o200k_base encoding (GPT-4o family), loaded once from the package. */
export function countTokens(text: string): number {
  encoder ??= new Tiktoken(o200kBase);
  return encoder.encode(text).length;
}

/**
 * Whether a text has more than `threshold` tokens. A token is at least one UTF-8 byte, so texts whose
 * byte length is under the threshold are answered without tokenizing: exact where it matters, free
 * for the common small prompt.
 */
export function exceedsTokens(text: string, threshold: number): { exceeds: boolean; tokens?: number } {
  if (Buffer.byteLength(text, 'utf8') <= threshold) return { exceeds: false };
  const tokens = countTokens(text);
  return { exceeds: tokens > threshold, tokens };
}
