import sjson from 'secure-json-parse';

/**
 * Parses JSON read from an untrusted place (a request, a record in Redis) with every `__proto__` and
 * `constructor.prototype` key removed, so that merging the result into another object can never change
 * a prototype. Throws a SyntaxError on malformed JSON, like `JSON.parse`.
 */
export function parseJsonSafely<T = unknown>(text: string): T {
  return sjson.parse(text, undefined, { protoAction: 'remove', constructorAction: 'remove' }) as T;
}
