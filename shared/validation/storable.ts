/**
 * What PostgreSQL cannot store: U+0000 in text and jsonb, and a lone (unpaired) surrogate in
 * jsonb (text would store it as U+FFFD, silently changed). Input from outside (an HTTP request, a
 * desktop app's message) is checked here at the edge, whatever its field, rather than field by
 * field deeper in: the database's refusal would otherwise be a 500.
 */

/** ES2024's string methods (Node 20 has them; the project's `lib` is ES2023). */
type WellFormed = string & { isWellFormed(): boolean; toWellFormed(): string };

/** Whether PostgreSQL stores `text` as it is, in text and in jsonb. */
export function storable(text: string): boolean {
  return !text.includes('\u0000') && (text as WellFormed).isWellFormed();
}

/** Binary data (a screenshot) is stored as bytes, never as text: not walked. */
const isBinary = (value: object): boolean => ArrayBuffer.isView(value) || value instanceof ArrayBuffer;

/**
 * The first string (or object key, `…#key`) in `value` that PostgreSQL cannot store, or number
 * that is not finite (`…#number`), as a JSON pointer; null when there is none. Infinity comes
 * from ajv's coercion of a query's `after=Infinity`, which passes `integer`, `minimum` and
 * `maximum` alike. Binary values are skipped. Iterative: a deeply nested body must not overflow
 * the stack.
 */
export function unstorableValueAt(value: unknown): string | null {
  const pending: Array<[unknown, string]> = [[value, '']];
  while (pending.length > 0) {
    const [node, pointer] = pending.pop()!;
    if (typeof node === 'string') {
      if (!storable(node)) return pointer;
    } else if (typeof node === 'number') {
      if (!Number.isFinite(node)) return `${pointer}#number`;
    } else if (Array.isArray(node)) {
      for (let n = node.length - 1; n >= 0; n--) pending.push([node[n], `${pointer}/${n}`]);
    } else if (typeof node === 'object' && node !== null && !isBinary(node)) {
      const keys = Object.keys(node);
      for (let n = keys.length - 1; n >= 0; n--) {
        const key = keys[n]!;
        const at = `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
        if (!storable(key)) return `${at}#key`;
        pending.push([(node as Record<string, unknown>)[key], at]);
      }
    }
  }
  return null;
}

/** `text` with every U+0000 and lone surrogate replaced by U+FFFD (the replacement character). */
export function storableText(text: string): string {
  return (text.replace(/\u0000/g, '\uFFFD') as WellFormed).toWellFormed();
}

/**
 * `value` with every string and object key made storable (`storableText`); binary values and
 * everything else as they are. `value` itself when it holds nothing unstorable (no copy).
 * Iterative, like `unstorableValueAt`: an app's message may nest deeply.
 */
export function withStorableStrings<T>(value: T): T {
  if (unstorableValueAt(value) === null) return value;
  const root: Record<string, unknown> = {};
  const pending: Array<[unknown, Record<string | number, unknown>, string | number]> = [[value, root, 'value']];
  // Own data properties (never a plain assignment): a key "__proto__" stays a key.
  const put = (target: Record<string | number, unknown>, slot: string | number, inner: unknown) =>
    Object.defineProperty(target, slot, { value: inner, enumerable: true, writable: true, configurable: true });
  while (pending.length > 0) {
    const [node, parent, slot] = pending.pop()!;
    if (typeof node === 'string') {
      put(parent, slot, storableText(node));
    } else if (Array.isArray(node)) {
      const out: unknown[] = new Array(node.length);
      put(parent, slot, out);
      for (let n = 0; n < node.length; n++) pending.push([node[n], out as unknown as Record<number, unknown>, n]);
    } else if (typeof node === 'object' && node !== null && !isBinary(node)) {
      const out: Record<string, unknown> = {};
      put(parent, slot, out);
      for (const [key, inner] of Object.entries(node)) {
        const storableKey = storableText(key);
        put(out, storableKey, undefined); // keeps the keys' order, whatever order they are filled in
        pending.push([inner, out, storableKey]);
      }
    } else {
      put(parent, slot, node);
    }
  }
  return root.value as T;
}
