import { RedisScript } from '../../redis-script.js';

/**
 * Appends a replica's batch of subscription changes to the feed (SPEC §6.5), each only when some
 * replica claimed its collection by the time it was written. Deciding here, in the one order
 * Redis runs commands in, is what makes a claim and a write ordered: a subscriber is answered
 * only after its claim was written, so a write answered after that finds the claim, whichever
 * replica proxied it and whatever that replica has heard (issue 53 item 7).
 *
 * A batch is written once: its token is set first (NX), so the same batch sent again after a
 * reconnect (ioredis resends what was in flight; the publisher retries what failed, and a frozen
 * Redis may still run what it was sent) appends nothing the second time (issue 53 item 11).
 *
 * Each entry also carries `k`, the token and its place in the batch: a batch that a master took
 * and then lost in a failover before a replica had it is sent again to the promoted replica, where
 * the token is gone with it, so it is appended a second time; a reader that had read the first
 * copy knows the second by its `k` and skips it (feed/read-keys.ts).
 *
 * KEYS[1] the feed stream, KEYS[2] the claims (sorted set scored by expiry on Redis's clock),
 * KEYS[3] the batch's token key. ARGV[1] the stream's MAXLEN (approximate), ARGV[2] the token's
 * lifetime (ms), ARGV[3] the token; then four per entry: the claim member, the change's age when
 * sent (ms), the field (`c` a change, published if claimed when written; `g` a gap notice,
 * always), the JSON.
 * Returns `{appended}` followed by the members found claimed (the writer's hint for which writes
 * are worth reading back), or `{-1}` when the batch had already been written.
 */
export const publishSubscribedChanges = new RedisScript(
  'publishSubscribedChanges',
  `
if not redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[2]) then return {-1} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local added = 0
local claimed, seen = {}, {}
local i = 4
while i + 3 <= #ARGV do
  local field = ARGV[i + 2]
  local publish = field == 'g'
  if not publish then
    local expires = redis.call('ZSCORE', KEYS[2], ARGV[i])
    publish = expires and tonumber(expires) >= now - tonumber(ARGV[i + 1])
    if expires and tonumber(expires) >= now and not seen[ARGV[i]] then
      seen[ARGV[i]] = true
      claimed[#claimed + 1] = ARGV[i]
    end
  end
  if publish then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', field, ARGV[i + 3], 'k', ARGV[3] .. '/' .. ((i - 4) / 4))
    added = added + 1
  end
  i = i + 4
end
table.insert(claimed, 1, added)
return claimed
`,
);
