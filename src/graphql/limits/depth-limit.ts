/**
 * A validation rule bounding how deeply a query nests selections (`graphql.maxDepth`).
 * `{ orders { user { name } } }` has depth 3. Fragments count where they are spread; introspection
 * fields (`__schema`, `__type`, `__typename`) are not counted, so tools' introspection queries
 * (which nest `ofType` many levels) keep working.
 */
import { GraphQLError, Kind, type FragmentDefinitionNode, type SelectionSetNode, type ValidationRule } from 'graphql';

export function depthLimitRule(maxDepth: number): ValidationRule {
  return (context) => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const d of context.getDocument().definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
    const memo = new Map<string, number>();

    const measure = (set: SelectionSetNode, visiting: Set<string>): number => {
      let deepest = 0;
      for (const sel of set.selections) {
        if (sel.kind === Kind.FIELD) {
          if (sel.name.value.startsWith('__')) continue;
          deepest = Math.max(deepest, 1 + (sel.selectionSet ? measure(sel.selectionSet, visiting) : 0));
        } else if (sel.kind === Kind.INLINE_FRAGMENT) {
          deepest = Math.max(deepest, measure(sel.selectionSet, visiting));
        } else {
          const name = sel.name.value;
          const fragment = fragments.get(name);
          if (!fragment || visiting.has(name)) continue; // unknown or cyclic: other rules report it
          let depth = memo.get(name);
          if (depth === undefined) {
            visiting.add(name);
            depth = measure(fragment.selectionSet, visiting);
            visiting.delete(name);
            memo.set(name, depth);
          }
          deepest = Math.max(deepest, depth);
        }
      }
      return deepest;
    };

    return {
      OperationDefinition(node) {
        const depth = measure(node.selectionSet, new Set());
        if (depth > maxDepth) {
          context.reportError(
            new GraphQLError(`the query nests ${depth} levels deep; at most ${maxDepth} are allowed (graphql.maxDepth)`, {
              nodes: [node],
              extensions: { code: 'DEPTH_LIMIT_EXCEEDED' },
            }),
          );
        }
      },
    };
  };
}
