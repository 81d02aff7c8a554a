import { describe, expect, it } from 'vitest';
import { exchangeFromParts, parseCondition, type ExchangeUser } from '../../../src/condition/index.js';
import { matches, syntaxError } from './helpers.js';

const alice: ExchangeUser = { id: 'alice', roles: ['user', 'editor'], tenant: 'acme', profile: { team: 'blue' }, age: 42 };
const asAlice = (path: string, extra: object = {}) => ({ path, user: alice, ...extra });
const acl = (expression: string, parts: object): boolean => matches(expression, parts, true);

describe('@user variables (ACL permissions)', () => {
  it('compares the caller with a path variable', () => {
    const condition = "path-template('/{userid}/orders') and equals(@user.id, ${userid})";
    expect(acl(condition, asAlice('/alice/orders'))).toBe(true);
    expect(acl(condition, asAlice('/bob/orders'))).toBe(false);
  });

  it('reads _id as the user id (RESTHeart accounts), other fields and nested fields', () => {
    expect(acl("path-template('/{u}') and equals(@user._id, ${u})", asAlice('/alice'))).toBe(true);
    expect(acl('equals(@user.tenant, %{i,X-Tenant})', asAlice('/', { headers: { 'X-Tenant': 'acme' } }))).toBe(true);
    expect(acl('equals(@user.profile.team, blue)', asAlice('/'))).toBe(true);
    expect(acl('equals(@user.age, 42)', asAlice('/'))).toBe(true);
    expect(acl('equals(@user.roles.1, editor)', asAlice('/'))).toBe(true);
  });

  it('spreads an array where a list is expected', () => {
    expect(acl('in(value=%{q,role}, array=@user.roles)', asAlice('/?role=editor'))).toBe(true);
    expect(acl('in(value=%{q,role}, array=@user.roles)', asAlice('/?role=admin'))).toBe(false);
    expect(acl('qparams-whitelist(@user.roles)', asAlice('/?user=1'))).toBe(true);
    expect(acl('path-prefix(@user.tenant)', asAlice('/acme/x'))).toBe(true);
    expect(acl('in(value=%{q,t}, array={@user.tenant, other})', asAlice('/?t=acme'))).toBe(true);
  });

  it('never lets an unresolved variable match: not anonymous, not a missing field, not an array as a value', () => {
    expect(acl("path-template('/{u}') and equals(@user.id, ${u})", { path: '/alice' })).toBe(false);
    expect(acl('equals(@user.missing, @user.other)', asAlice('/'))).toBe(false);
    expect(acl('equals(@user.missing, %{i,X})', asAlice('/'))).toBe(false);
    expect(acl("equals(@user.roles, '[user, editor]')", asAlice('/'))).toBe(false);
    expect(acl('equals(@user.profile, x)', asAlice('/'))).toBe(false);
    expect(acl('in(value=%{q,r}, array=@user.missing)', asAlice('/?r='))).toBe(false);
  });

  it('is refused outside ACL permissions (webhook conditions)', () => {
    const error = syntaxError('equals(@user.id, x)');
    expect(error.message).toMatch(/only available in ACL/);
    expect(error.position).toBe(7);
  });

  it('must be a whole value of an attribute or list parameter', () => {
    expect(syntaxError("path-template('/@user.id')", true).message).toMatch(/whole value/);
    expect(syntaxError('regex(@user.id)', true).message).toMatch(/cannot be an @user variable/);
    expect(syntaxError('qparams-size(@user.age)', true).message).toMatch(/cannot be an @user variable/);
    expect(syntaxError('equals(@user, x)', true).message).toMatch(/@user\.<field>/);
  });

  it("refuses RESTHeart's other @ variables with a clear message, but keeps e-mail literals", () => {
    expect(syntaxError('equals(@request.body.owner, @user.id)', true).message).toMatch(/@request is not supported/);
    expect(syntaxError('equals(%{q,t}, @now)', true).message).toMatch(/@now is not supported/);
    expect(acl("equals(%{i,From}, 'bob@user.com')", { headers: { From: 'bob@user.com' } })).toBe(true);
  });
});

describe('predicate-context bindings', () => {
  it('flow from earlier predicates to later ones, left to right', () => {
    expect(matches("path-template('/{a}/{b}') and equals(${a}, ${b})", { path: '/same/same' })).toBe(true);
    expect(matches("path-template('/{a}/{b}') and equals(${a}, ${b})", { path: '/one/two' })).toBe(false);
    expect(matches("equals(${a}, x) or path-template('/{a}')", { path: '/x' })).toBe(true);
  });

  it('read as absent before they are bound', () => {
    expect(matches('equals(${id}, %{NULL})')).toBe(true);
    expect(matches('exists(${id})')).toBe(false);
  });

  it('are kept by a predicate that matched under not', () => {
    expect(matches("not path-template('/{id}') or equals(${id}, x)", { path: '/x' })).toBe(true);
  });

  it('read only one character after a bare $ ($id is ${i} then d), as in Undertow', () => {
    expect(matches("path-template('/{i}') and equals($id, 7d)", { path: '/7' })).toBe(true);
  });

  it("start empty on every evaluation, so one condition never sees another one's values", () => {
    const binder = parseCondition("path-template('/{id}')");
    const reader = parseCondition('exists(${id})');
    const exchange = exchangeFromParts({ path: '/42' });
    expect(binder.evaluate(exchange)).toBe(true);
    expect(reader.evaluate(exchange)).toBe(false);
  });

  it('are rebound by a later match', () => {
    expect(matches("path-prefix(/a) and regex('(b)') and equals(${1}, b) and regex('(c)') and equals(${1}, c)", { path: '/a/bc' })).toBe(true);
  });
});
