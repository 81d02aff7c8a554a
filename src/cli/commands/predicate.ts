import type { Command } from 'commander';
import { parseBoundedJson } from '../../input-limits/json-depth.js';
import { ConditionSyntaxError, exchangeFromParts, parseCondition, pointAtPosition, type ExchangeParts } from '../../condition/index.js';

/** The options of `outrigger predicate test`, as commander hands them over. */
export interface PredicateTestOptions {
  readonly method?: string;
  /** May carry a query string: `/c?a=1&b=2`. */
  readonly path?: string;
  /** `Name:Value`, repeatable; names are case-insensitive. */
  readonly header?: readonly string[];
  readonly status?: string | number;
  /** Evaluate as this user (for `@user.id`); with `role` for `@user.roles`. */
  readonly user?: string;
  readonly role?: readonly string[];
  /** A JSON request body, for bson-request-* predicates. */
  readonly body?: string;
}

export interface PredicateTestResult {
  /** 0: the condition matched, 1: it did not, 2: it (or an option) is invalid. */
  readonly exitCode: 0 | 1 | 2;
  readonly output: string;
  /** Printed on stderr after the output: why a `false` may not mean what it seems. */
  readonly hint?: string;
}

/**
 * Parses `expression` and evaluates it against the request the options describe. Pure, so the
 * command's behaviour is testable without a process.
 */
export function runPredicateTest(expression: string, options: PredicateTestOptions = {}): PredicateTestResult {
  const parts = describeRequest(options);
  if (typeof parts === 'string') return { exitCode: 2, output: `error: ${parts}` };
  try {
    // ACL conditions may use @user variables and this command serves both kinds.
    const condition = parseCondition(expression, { allowUserVariables: true });
    const matched = condition.evaluate(exchangeFromParts(parts));
    if (!matched && condition.usesResponse && options.status === undefined) {
      // Without --status there is no response, so response attributes (%s, %{o,...}) are empty.
      const hint = 'hint: the condition reads the response (its status or headers) but no --status was given, so it was evaluated without one; add --status <code>, e.g. --status 200';
      return { exitCode: 1, output: 'false', hint };
    }
    return { exitCode: matched ? 0 : 1, output: String(matched) };
  } catch (error) {
    if (!(error instanceof ConditionSyntaxError)) throw error;
    return {
      exitCode: 2,
      output: `error: ${error.message} (at position ${error.position})\n${pointAtPosition(expression, error.position)}`,
    };
  }
}

function describeRequest(options: PredicateTestOptions): ExchangeParts | string {
  const headers: Array<[string, string]> = [];
  for (const header of options.header ?? []) {
    const colon = header.indexOf(':');
    if (colon <= 0) return `--header must look like Name:Value, got '${header}'`;
    headers.push([header.slice(0, colon).trim(), header.slice(colon + 1).trim()]);
  }
  let status: number | undefined;
  if (options.status !== undefined) {
    status = Number(options.status);
    if (!Number.isInteger(status) || status < 100 || status > 999) return `--status must be an HTTP status code, got '${options.status}'`;
  }
  let body: unknown;
  if (options.body !== undefined) {
    const parsed = parseBoundedJson(options.body);
    if (!parsed.ok) return parsed.tooDeep ? `--body ${parsed.message}` : `--body must be JSON: ${parsed.message}`;
    body = parsed.value;
  }
  return {
    method: options.method ?? 'GET',
    path: options.path ?? '/',
    headers,
    ...(status !== undefined && { status, responseHeaders: [] }),
    ...(options.body !== undefined && { body }),
    ...(options.user !== undefined && { user: { id: options.user, roles: [...(options.role ?? [])] } }),
  };
}

/** Where the command writes and how it ends; replaceable in tests. */
export interface CommandIo {
  write(stream: 'stdout' | 'stderr', text: string): void;
  /** The code the process ends with once the command returns. */
  setExitCode(code: number): void;
  /** Ends at once: commander's usage errors, already printed by commander. */
  exit(code: number): never;
}

const processIo: CommandIo = {
  write: (stream, text) => void (stream === 'stdout' ? process.stdout : process.stderr).write(text),
  setExitCode: (code) => {
    process.exitCode = code;
  },
  exit: (code) => process.exit(code),
};

const collect = (value: string, previous: string[]): string[] => [...previous, value];

export function registerPredicateCommand(program: Command, io: CommandIo = processIo): void {
  const predicate = program.command('predicate').description('work with conditions (ACL predicates and webhook conditions)');
  predicate
    .command('test')
    .description('parse a condition and evaluate it against a described request; prints true (exit 0) or false (exit 1), or the parse error with a caret (exit 2)')
    .argument('<expression>', 'the condition, e.g. "path-prefix(\'/api\') and method(GET)"')
    .option('--method <method>', 'request method', 'GET')
    .option('--path <path>', 'request path, may carry a query string (/c?a=1&b=2)', '/')
    .option('--header <name:value>', 'request header, repeatable (names are case-insensitive)', collect, [])
    .option('--status <code>', 'response status, for response attributes such as %s')
    .option('--user <id>', 'evaluate as this user, for @user.id')
    .option('--role <role>', 'a role of --user, repeatable, for @user.roles', collect, [])
    .option('--body <json>', 'JSON request body, for bson-request-* predicates')
    // Usage errors must not exit 1, which means "false".
    .exitOverride((error) => io.exit(error.exitCode === 0 ? 0 : 2))
    .action((expression: string, options: PredicateTestOptions) => {
      const result = runPredicateTest(expression, options);
      io.write(result.exitCode === 2 ? 'stderr' : 'stdout', `${result.output}\n`);
      if (result.hint) io.write('stderr', `${result.hint}\n`);
      io.setExitCode(result.exitCode);
    });
}
