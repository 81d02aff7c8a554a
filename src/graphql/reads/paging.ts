/**
 * skip/limit → page/pagesize. The backend has no skip or limit parameter: it returns page `page`
 * (from 1) of `pagesize` documents. When skip is a multiple of limit one page is exact; otherwise
 * we look for the smallest page size whose one page covers [skip, skip+limit), and failing that
 * read two consecutive pages of `limit` documents. The caller slices `offset..offset+limit` out of
 * the concatenated pages.
 */
import { BACKEND_MAX_PAGESIZE } from '../types.js';

export interface PagePlan {
  readonly pagesize: number;
  /** First page to read (1-based). */
  readonly page: number;
  /** How many consecutive pages to read (1 or 2). */
  readonly pages: 1 | 2;
  /** Index of the first wanted document in the concatenated pages. */
  readonly offset: number;
  readonly limit: number;
}

export function planPages(skip: number, limit: number, maxPageSize = BACKEND_MAX_PAGESIZE): PagePlan {
  if (!Number.isInteger(skip) || skip < 0) throw new RangeError(`skip must be an integer >= 0, got ${skip}`);
  if (!Number.isInteger(limit) || limit < 1 || limit > maxPageSize) {
    throw new RangeError(`limit must be an integer in 1..${maxPageSize}, got ${limit}`);
  }
  if (skip % limit === 0) return { pagesize: limit, page: skip / limit + 1, pages: 1, offset: 0, limit };
  const last = skip + limit - 1;
  for (let p = limit + 1; p <= maxPageSize; p++) {
    const first = Math.floor(skip / p);
    if (first === Math.floor(last / p)) return { pagesize: p, page: first + 1, pages: 1, offset: skip - first * p, limit };
  }
  const first = Math.floor(skip / limit);
  return { pagesize: limit, page: first + 1, pages: 2, offset: skip - first * limit, limit };
}
