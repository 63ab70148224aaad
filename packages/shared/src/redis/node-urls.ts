/** The node URLs of a `REDIS_URL`: one, or several separated by commas (a cluster's startup nodes). */
export function redisNodeUrls(url: string): string[] {
  return url
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
}
