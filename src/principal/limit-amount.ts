/**
 * How many units per window (SPEC §10): what a `limits:` policy sets and what a key's override
 * replaces. It lives beside the principal, not in config/, because a key-authenticated principal
 * carries its key's amounts: keeping both here lets the principal stay a leaf that transport,
 * stores and features can name without importing the config or access layers.
 */
export const QUOTA_PERIODS = ['day', 'month'] as const;
export type QuotaPeriod = (typeof QUOTA_PERIODS)[number];

/** A rolling limit's window in seconds, or a calendar period in UTC (a quota). */
export type LimitWindow = { seconds: number; period?: undefined } | { period: QuotaPeriod; seconds?: undefined };

/** How many units per window: what a policy sets and what a key's override replaces. */
export interface LimitAmount {
  limit: number;
  window: LimitWindow;
}
