import { expect } from 'vitest';

/**
 * Logs in to the inspector at `h.url` as its login form does and returns the session cookie as
 * `name=value`, for a browser context's cookies or a request's `cookie` header.
 */
export async function login(h: { url: string }, key: string): Promise<string> {
  const res = await fetch(`${h.url}/ui/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ key }),
  });
  expect(res.status).toBe(204);
  return (res.headers.get('set-cookie') ?? '').split(';')[0]!;
}
