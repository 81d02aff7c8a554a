import { RedisScript } from '../redis-script.js';

/**
 * KEYS[1] the event stream; ARGV[1] its MAXLEN; then for each event the number of its field and
 * value arguments followed by them. Each event becomes its own entry, as with one XADD each.
 * `pcall`, like a MULTI: an XADD that Redis refuses does not stop the others. Answers
 * `{refused, first error}`.
 */
export const xaddEach = new RedisScript(
  'xaddEach',
  `
local refused, first = 0, nil
local i = 2
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local reply = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', unpack(ARGV, i + 1, i + n))
  if type(reply) == 'table' and reply.err then
    refused = refused + 1
    first = first or reply.err
  end
  i = i + 1 + n
end
if first then return {refused, first} end
return {0}
`,
);
