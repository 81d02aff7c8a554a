/**
 * SPEC §13's classes for shedding: who is refused first when the backend is at its limit. Set on
 * a key (`PATCH /_admin/keys/<id> {"priority": ...}`), a rate-limit policy (`priority`) or a
 * permission (`priorityClass`); where several apply the highest wins; none is `default`.
 */
export const PRIORITY_CLASSES = ['critical', 'default', 'sheddable'] as const;
export type PriorityClass = (typeof PRIORITY_CLASSES)[number];

/** The class's place in serving order: 0 critical, 1 default (also for none), 2 sheddable. */
export function priorityRank(c: PriorityClass | undefined): 0 | 1 | 2 {
  return c === 'critical' ? 0 : c === 'sheddable' ? 2 : 1;
}

/** The higher of two classes, either possibly unset. */
export function higherPriority(a: PriorityClass | undefined, b: PriorityClass | undefined): PriorityClass | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return priorityRank(a) <= priorityRank(b) ? a : b;
}

export function isPriorityClass(value: unknown): value is PriorityClass {
  return typeof value === 'string' && (PRIORITY_CLASSES as readonly string[]).includes(value);
}
