/**
 * The two "is this an object" questions the code asks, each under one name. They differ on
 * purpose: a value parsed from JSON can only be an object, an array or a scalar, so the cheap
 * test is exact for it; a value that may come from a driver or a caller's code may also be a
 * Date, an ObjectId or a class instance, which a document's key walk must not take apart.
 */

/** A JSON object: not null, not an array. Exact for values parsed from JSON. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An object literal (prototype Object.prototype or null): not an array, a Date or a class instance. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
