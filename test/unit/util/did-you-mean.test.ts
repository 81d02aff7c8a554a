import { describe, expect, it } from 'vitest';
import { didYouMean, editDistance } from '../../../src/util/did-you-mean.js';

describe('didYouMean', () => {
  it('suggests a candidate within a typo of the input, case-insensitively', () => {
    expect(didYouMean('timeoutMS', ['url', 'timeoutMs', 'connections'])).toBe(' (did you mean "timeoutMs"?)');
    expect(didYouMean('trustedProxy', ['host', 'port', 'trustedProxies'])).toBe(' (did you mean "trustedProxies"?)');
    expect(didYouMean('upstreem', ['service', 'upstream', 'redis'])).toBe(' (did you mean "upstream"?)');
  });

  it('stays silent when nothing is close', () => {
    expect(didYouMean('colour', ['url', 'timeoutMs'])).toBe('');
    expect(didYouMean('ab', [])).toBe('');
  });

  it('counts an adjacent transposition as one edit', () => {
    expect(editDistance('hte', 'the')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });
});
