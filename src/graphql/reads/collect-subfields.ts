/**
 * graphql-js's collectSubfields (execution/collectFields.js, internal), with public APIs: the
 * fields a selection of `type` asks for, by response key, through fragments and `@skip`/`@include`.
 * The prefetcher (prefetch.ts) plans with it, so it must group fields exactly as graphql-js does.
 */
import {
  getDirectiveValues,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  isAbstractType,
  Kind,
  typeFromAST,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type InlineFragmentNode,
  type SelectionSetNode,
} from 'graphql';

export function collectSubfields(
  schema: GraphQLSchema,
  fragments: Readonly<Record<string, FragmentDefinitionNode>>,
  variables: Readonly<Record<string, unknown>>,
  type: GraphQLObjectType,
  nodes: readonly FieldNode[],
): Map<string, FieldNode[]> {
  const fields = new Map<string, FieldNode[]>();
  const visited = new Set<string>();

  const included = (node: Parameters<typeof getDirectiveValues>[1]): boolean => {
    const skip = getDirectiveValues(GraphQLSkipDirective, node, variables);
    if (skip?.if === true) return false;
    const include = getDirectiveValues(GraphQLIncludeDirective, node, variables);
    return include?.if !== false;
  };

  const conditionMatches = (fragment: InlineFragmentNode | FragmentDefinitionNode): boolean => {
    const condition = fragment.typeCondition;
    if (!condition) return true;
    const conditional = typeFromAST(schema, condition);
    if (conditional === type) return true;
    return conditional !== undefined && isAbstractType(conditional) ? schema.isSubType(conditional, type) : false;
  };

  const collect = (selectionSet: SelectionSetNode): void => {
    for (const selection of selectionSet.selections) {
      switch (selection.kind) {
        case Kind.FIELD: {
          if (!included(selection)) continue;
          const key = selection.alias ? selection.alias.value : selection.name.value;
          const list = fields.get(key);
          if (list !== undefined) list.push(selection);
          else fields.set(key, [selection]);
          break;
        }
        case Kind.INLINE_FRAGMENT: {
          if (!included(selection) || !conditionMatches(selection)) continue;
          collect(selection.selectionSet);
          break;
        }
        case Kind.FRAGMENT_SPREAD: {
          const name = selection.name.value;
          if (visited.has(name) || !included(selection)) continue;
          visited.add(name);
          const fragment = fragments[name];
          if (!fragment || !conditionMatches(fragment)) continue;
          collect(fragment.selectionSet);
          break;
        }
      }
    }
  };

  for (const node of nodes) if (node.selectionSet) collect(node.selectionSet);
  return fields;
}
