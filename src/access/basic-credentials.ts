/** Parses `Authorization: Basic base64(id:password)`; null when it is not a well-formed Basic header. */
export function parseBasicAuthorization(header: string): { id: string; password: string } | null {
  if (header.length < 7 || header.slice(0, 6).toLowerCase() !== 'basic ') return null;
  const encoded = header.slice(6).trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return null;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return null;
  return { id: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
