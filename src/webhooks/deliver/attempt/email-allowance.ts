/**
 * The daily e-mail allowance (SPEC §7.2.4): per service and UTC day, counting every recipient
 * (to + cc), all-or-none per webhook. Reserving is one Lua script, so two workers sending at the
 * same moment can never together exceed the allowance, and a webhook with five recipients when
 * three are left reserves nothing.
 */
import type { Redis } from 'ioredis';
import type { RedisKeys } from '../../../store/keys.js';
import { utcDay } from '../../../store/keys.js';
import { reserveEmailAllowance } from '../../../store/scripts/reserve-email-allowance.js';
import { releaseEmailAllowance } from '../../../store/scripts/release-email-allowance.js';

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
    const result = await reserveEmailAllowance.run(this.redis, [this.keys.emailAllowance(day)], [recipients, this.dailyAllowance, DAY_KEY_TTL_SECONDS]);
    return { ok: Number(result) >= 0, day };
  }

  /** Gives back a reservation whose message was not sent. */
  async release(recipients: number, day: string): Promise<void> {
    await releaseEmailAllowance.run(this.redis, [this.keys.emailAllowance(day)], [recipients]);
  }

  async used(now = Date.now()): Promise<number> {
    return Number((await this.redis.get(this.keys.emailAllowance(utcDay(now)))) ?? 0);
  }
}
