// Issue 17, item 7: building an app's executable schema with @graphql-tools/schema
// (makeExecutableSchema + a resolver map, __resolveType for unions) against graphql-js alone
// (buildASTSchema, then resolvers and resolveType set on the schema's fields and types, as
// src/graphql/compile/ does). Same SDL, same resolvers, same query; prints medians.
// Run: NODE_ENV=production node bench/schema-building.mjs (no build needed)
import { makeExecutableSchema } from '@graphql-tools/schema';
import { buildASTSchema, execute, parse } from 'graphql';

const N_TYPES = 40;
let sdl = 'scalar ObjectId\nunion Course = InternalCourse | ExternalCourse\n';
sdl += 'type InternalCourse { _id: ObjectId, title: String, level: Int }\ntype ExternalCourse { _id: ObjectId, title: String, deliveredBy: String }\n';
for (let i = 0; i < N_TYPES; i++) sdl += `type T${i} { id: String, name: String, n: Int, next: T${(i + 1) % N_TYPES}, items: [T${(i + 2) % N_TYPES}] }\n`;
sdl += `type Query { courses: [Course], ${Array.from({ length: N_TYPES }, (_, i) => `t${i}: [T${i}]`).join(', ')} }`;

const courses = Array.from({ length: 1000 }, (_, i) => (i % 3 === 0 ? { _id: `${i}`, title: `c${i}`, sub: { external: true }, deliveredBy: 'x' } : { _id: `${i}`, title: `c${i}`, level: i % 3 }));
const resolveType = (v) => (v.sub?.external === true ? 'ExternalCourse' : 'InternalCourse');
const rename = (source) => source._id;

function withTools() {
  const resolvers = { Query: { courses: () => courses }, Course: { __resolveType: resolveType }, InternalCourse: { _id: rename }, ExternalCourse: { _id: rename } };
  return makeExecutableSchema({ typeDefs: sdl, resolvers });
}
function withGraphqlJs() {
  const schema = buildASTSchema(parse(sdl));
  schema.getQueryType().getFields().courses.resolve = () => courses;
  schema.getType('Course').resolveType = resolveType;
  for (const t of ['InternalCourse', 'ExternalCourse']) schema.getType(t).getFields()._id.resolve = rename;
  return schema;
}

const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
function time(fn, rounds) {
  const out = [];
  for (let i = 0; i < rounds; i++) {
    const t = process.hrtime.bigint();
    fn();
    out.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return median(out);
}
const query = parse('{ courses { __typename ... on InternalCourse { _id title level } ... on ExternalCourse { _id title deliveredBy } } }');
for (const [name, build] of [
  ['graphql-js alone', withGraphqlJs],
  ['@graphql-tools/schema', withTools],
]) {
  for (let i = 0; i < 20; i++) build(); // warm up
  const buildMs = time(build, 200);
  const schema = build();
  const check = execute({ schema, document: query });
  if (check.errors) throw new Error(check.errors[0].message);
  for (let i = 0; i < 50; i++) execute({ schema, document: query });
  const execMs = time(() => execute({ schema, document: query }), 300);
  console.log(`${name}: build ${buildMs.toFixed(3)} ms, execute 1000 union items ${execMs.toFixed(3)} ms (medians)`);
}
