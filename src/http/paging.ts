import { badRequest } from '../errors.js';

/** SPEC §0 lists: `page` from 1, `pagesize` default 100, max 1000. */
export function readPaging(query: URLSearchParams): { page: number; pagesize: number } {
  const page = readInt(query.get('page'), 1, 1, 1_000_000, 'page');
  const pagesize = readInt(query.get('pagesize'), 100, 1, 1000, 'pagesize');
  return { page, pagesize };
}

function readInt(text: string | null, fallback: number, min: number, max: number, name: string): number {
  if (text === null || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) throw badRequest(`${name} must be an integer from ${min} to ${max}`);
  return value;
}

export function pageOf<T>(items: T[], paging: { page: number; pagesize: number }): T[] {
  const start = (paging.page - 1) * paging.pagesize;
  return items.slice(start, start + paging.pagesize);
}
