/**
 * The daily e-mail allowance (SPEC §7.2.4): per service and UTC day, counting every recipient
 * (to + cc), all-or-none per webhook. Reserving is one Lua script, so two workers sending at the
 * same moment can never together exceed the allowance, and a webhook with five recipients when
 * three are left reserves nothing.
 */
import type { Redis } from 'ioredis';
import type { RedisKeys } from '../store/keys.js';
import { utcDay } from '../store/keys.js';

/** KEYS[1] the day's counter; ARGV: recipients, daily allowance, TTL seconds. Returns the new count, or -1 when it would exceed. */
const RESERVE_EMAIL_ALLOWANCE = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local wanted = tonumber(ARGV[1])
if used + wanted > tonumber(ARGV[2]) then return -1 end
local total = redis.call('INCRBY', KEYS[1], wanted)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return total
`;

/** KEYS[1] the day's counter; ARGV: recipients to give back. Never goes below zero. */
const RELEASE_EMAIL_ALLOWANCE = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local back = math.min(used, tonumber(ARGV[1]))
if back > 0 then redis.call('DECRBY', KEYS[1], back) end
return used - back
`;

const DAY_KEY_TTL_SECONDS = 2 * 86_400;

export class EmailAllowance {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly dailyAllowance: number,
  ) {}

  /** Reserves `recipients` for today; false (and nothing reserved) when that would exceed the allowance. */
  async reserve(recipients: number, now = Date.now()): Promise<{ ok: boolean; day: string }> {
    const day = utcDay(now);
    const result = await this.redis.eval(RESERVE_EMAIL_ALLOWANCE, 1, this.keys.emailAllowance(day), recipients, this.dailyAllowance, DAY_KEY_TTL_SECONDS);
    return { ok: Number(result) >= 0, day };
  }

  /** Gives back a reservation whose message was not sent. */
  async release(recipients: number, day: string): Promise<void> {
    await this.redis.eval(RELEASE_EMAIL_ALLOWANCE, 1, this.keys.emailAllowance(day), recipients);
  }

  async used(now = Date.now()): Promise<number> {
    return Number((await this.redis.get(this.keys.emailAllowance(utcDay(now)))) ?? 0);
  }
}
