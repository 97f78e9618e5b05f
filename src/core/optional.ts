/** `{ [key]: value }`, or `{}` when the value is undefined: for optional fields under
 *  exactOptionalPropertyTypes-style objects without `key: undefined` members. */
export function optional<K extends string, V>(key: K, value: V | undefined): { [k in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [k in K]?: V };
}
