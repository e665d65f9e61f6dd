/**
 * Dynamic variables as requests send them (docs/calls.md#create-outbound-call): strings, numbers or
 * booleans.
 */
export type DynamicVariablesInput = Readonly<Record<string, string | number | boolean>>;

/** Calls and chats store (and send to providers) every dynamic variable as a string. */
export function stringifyVariables(vars: DynamicVariablesInput | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(vars ?? {}).map(([key, value]) => [key, String(value)]));
}
