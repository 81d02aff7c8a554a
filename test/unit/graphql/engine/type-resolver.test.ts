/**
 * Unions and interfaces with RESTHeart's `$typeResolver` (its karate test apps test-union and
 * test-interface, unchanged), against the stand-in backend; and the write-time checks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePredicate, matches } from '../../../../src/graphql/document/type-resolver/predicate.js';
import { validateAppDocument } from '../../../../src/graphql/document/validate-app.js';
import { startEngine, type Engine } from '../helpers.js';

const courses = [
  { _id: { $oid: '638e119a2d91516248b4781a' }, level: 2, title: 'RESTHeart Core Plugins development' },
  { _id: { $oid: '638e11872d91516248b47817' }, level: 1, title: 'RESTHeart Security' },
  { _id: { $oid: '638e11742d91516248b47812' }, level: 0, title: 'MongoDB for Administrators', sub: { external: true }, deliveredBy: 'MongoDB' },
];

function restheartApp(kind: 'union' | 'interface'): Record<string, unknown> {
  const abstract =
    kind === 'union'
      ? 'union Course = InternalCourse | ExternalCourse type InternalCourse { _id: ObjectId, title: String, level: Level } type ExternalCourse { _id: ObjectId, title: String, level: Level, deliveredBy: String }'
      : 'interface Course { _id: ObjectId, title: String, level: Level } type InternalCourse implements Course { _id: ObjectId, title: String, level: Level } type ExternalCourse implements Course { _id: ObjectId, title: String, level: Level, deliveredBy: String }';
  return {
    _id: `test-${kind}`,
    descriptor: { name: `test-${kind}`, description: `GraphQL App using ${kind}`, enabled: true, uri: `test-${kind}` },
    schema: `enum Level { ENTRY, MEDIUM, ADVANCED } ${abstract} type Query { AllCourses: [Course], AllInternalCourses: [InternalCourse], AllExternalCourses: [ExternalCourse] }`,
    mappings: {
      Course: { $typeResolver: { InternalCourse: 'not field-exists(sub.external)', ExternalCourse: 'field-eq(field=sub.external, value=true)' } },
      Level: { ENTRY: 0, MEDIUM: 1, ADVANCED: 2 },
      Query: {
        AllInternalCourses: { db: 'test-graphql', collection: 'courses', find: { sub: { external: null } }, sort: { _id: -1 } },
        AllExternalCourses: { db: 'test-graphql', collection: 'courses', find: { sub: { external: true } }, sort: { _id: -1 } },
        AllCourses: { db: 'test-graphql', collection: 'courses', find: {}, sort: { _id: -1 } },
      },
    },
  };
}

for (const kind of ['union', 'interface'] as const) {
  describe(`RESTHeart's ${kind} app`, () => {
    let e: Engine;
    beforeAll(async () => {
      e = await startEngine({ 'test-graphql': { courses } }, restheartApp(kind));
    });
    afterAll(() => e.close());

    it('answers each document with the __typename its predicate picks', async () => {
      const r = await e.run('{ AllCourses { __typename ... on InternalCourse { title level } ... on ExternalCourse { title deliveredBy } } }');
      expect(r.status).toBe(200);
      expect(r.body.errors).toBeUndefined();
      expect(r.body.data.AllCourses).toEqual([
        { __typename: 'InternalCourse', title: 'RESTHeart Core Plugins development', level: 'ADVANCED' },
        { __typename: 'InternalCourse', title: 'RESTHeart Security', level: 'MEDIUM' },
        { __typename: 'ExternalCourse', title: 'MongoDB for Administrators', deliveredBy: 'MongoDB' },
      ]);
      expect(e.reads()).toHaveLength(1);
    });
  });
}

describe('a document no predicate matches', () => {
  it('is a field error TYPE_UNRESOLVED, the others answer', async () => {
    const app = restheartApp('union');
    (app.mappings as any).Course.$typeResolver = { InternalCourse: 'field-eq(field=level, value=2) and not field-exists(sub.external)', ExternalCourse: 'field-eq(field=sub.external, value=true)' };
    const e = await startEngine({ 'test-graphql': { courses } }, app);
    try {
      const r = await e.run('{ AllCourses { __typename } }');
      expect(r.status).toBe(200);
      expect(r.body.data.AllCourses).toEqual([{ __typename: 'InternalCourse' }, null, { __typename: 'ExternalCourse' }]);
      expect(r.body.errors[0].extensions.code).toBe('TYPE_UNRESOLVED');
      expect(r.body.errors[0].path).toEqual(['AllCourses', 1]);
    } finally {
      await e.close();
    }
  });
});

describe('write-time checks of $typeResolver', () => {
  const refuse = (resolver: unknown, kind: 'union' | 'interface' = 'union'): string[] => {
    const app = restheartApp(kind);
    (app.mappings as any).Course = resolver === undefined ? undefined : { $typeResolver: resolver };
    if (resolver === undefined) delete (app.mappings as any).Course;
    const r = validateAppDocument(app, { defaultDb: 'restheart', maxLimit: 1000 });
    return r.ok ? [] : r.problems;
  };

  it("accepts RESTHeart's apps unchanged", () => {
    expect(refuse(restheartApp('union').mappings && { InternalCourse: 'not field-exists(sub.external)', ExternalCourse: 'field-eq(field=sub.external, value=true)' })).toEqual([]);
  });
  it('refuses a missing resolver, an unmapped member, a bad predicate, an unknown type', () => {
    expect(refuse(undefined)).toEqual([expect.stringMatching(/^mappings.Course: missing \$typeResolver for union Course/)]);
    expect(refuse({ InternalCourse: 'not field-exists(sub.external)' }, 'interface')).toEqual([
      'mappings.Course.$typeResolver for interface Course does not map all objects implementing it: ExternalCourse would be unreachable',
    ]);
    expect(refuse({ InternalCourse: 'foo(bar) and not field-exists(external)', ExternalCourse: 'field-eq(field=external, value=true)' })[0]).toMatch(
      /^mappings.Course.\$typeResolver.InternalCourse: error parsing \$typeResolver predicate "foo\(bar\) and not field-exists\(external\)": unknown predicate "foo"/,
    );
    expect(refuse({ InternalCourse: 'field-exists(a)', ExternalCourse: 'field-exists(b)', Course: 'field-exists(c)' })).toContainEqual(
      expect.stringMatching(/^mappings.Course.\$typeResolver.Course: Course is not a member of union Course/),
    );
  });
  const warningsOf = (resolver: unknown): string[] => {
    const app = restheartApp('union');
    (app.mappings as any).Course = { $typeResolver: resolver };
    const r = validateAppDocument(app, { defaultDb: 'restheart', maxLimit: 1000 });
    return r.ok ? r.warnings : [`refused: ${r.problems.join('; ')}`];
  };
  it('accepts an overlap (the first written wins, as RESTHeart) with a warning naming it and its winner, with a witness', () => {
    const resolver = { InternalCourse: 'field-exists(title)', ExternalCourse: 'field-eq(field=sub.external, value=true)' };
    expect(refuse(resolver)).toEqual([]);
    expect(warningsOf(resolver)).toEqual([
      'mappings.Course.$typeResolver.ExternalCourse: overlaps InternalCourse: a document can match both ("field-exists(title)" and "field-eq(field=sub.external, value=true)", e.g. when title exists, sub.external is true, sub.external exists); InternalCourse, written first, wins it',
    ]);
    expect(warningsOf({ InternalCourse: 'field-eq(field=k, value=1)', ExternalCourse: 'field-eq(field=k, value=2)' })).toEqual([]);
  });
  it('refuses a type that can never be picked: a predicate that never holds, or one every match of which an earlier entry takes', () => {
    expect(refuse({ InternalCourse: 'field-exists(a) and not field-exists(a)', ExternalCourse: 'field-exists(b)' })).toEqual([
      'mappings.Course.$typeResolver.InternalCourse: the predicate "field-exists(a) and not field-exists(a)" can never hold, so InternalCourse is unreachable',
    ]);
    expect(refuse({ InternalCourse: 'field-exists(a)', ExternalCourse: 'field-exists(a) and field-exists(b)' })).toEqual([
      'mappings.Course.$typeResolver.ExternalCourse: every document "field-exists(a) and field-exists(b)" matches is matched first by an entry written before it (InternalCourse), so ExternalCourse is unreachable; write it earlier or narrow the others',
    ]);
    expect(refuse({ InternalCourse: 'field-eq(field=k, value=1)', ExternalCourse: 'field-eq(field=k, value=2)' })).toEqual([]);
    expect(refuse({ InternalCourse: 'value-eq(value=1)', ExternalCourse: 'field-eq(field=sub, value=\'{"a":1}\') and not field-exists(sub.b)' })).toEqual([]);
  });
});

describe('predicates', () => {
  it('parse undertow syntax and evaluate as RESTHeart does', () => {
    const doc = { sub: { foo: 1, string: 'a string' }, bar: { a: 1 } };
    expect(matches(parsePredicate('field-exists(sub.foo, bar)'), doc)).toBe(true);
    expect(matches(parsePredicate('field-exists(fields={sub.foo, nope})'), doc)).toBe(false);
    expect(matches(parsePredicate('field-eq(field=sub.foo, value=1)'), doc)).toBe(true);
    expect(matches(parsePredicate(`field-eq(field=sub.string, value='"a string"')`), doc)).toBe(true);
    expect(matches(parsePredicate(`field-eq(field=bar, value='{"a":1}')`), doc)).toBe(true);
    expect(matches(parsePredicate('not (field-exists(x) or field-exists(y)) and field-exists(bar)'), doc)).toBe(true);
    expect(matches(parsePredicate('value-eq(value=3)'), 3)).toBe(true);
    expect(() => parsePredicate('field-eq(field=a)')).toThrow('field-eq needs value');
    expect(() => parsePredicate('field-exists(a')).toThrow('expected "," or ")" at the end');
  });
});
