/** A page of a list: `{ data, has_more, next_cursor }` (spec: Limits, pagination). */
export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/**
 * Every item of a list, newest first, page after page: asks again with `cursor = next_cursor`
 * and the same filters until `has_more` is false. Stop early with `break`.
 */
export async function* everyItem<T, Q extends { cursor?: string }>(readPage: (query: Q) => Promise<Page<T>>, query: Q): AsyncGenerator<T, void, undefined> {
  let cursor = query.cursor;
  for (;;) {
    const page = await readPage({ ...query, cursor });
    yield* page.data;
    if (!page.has_more || page.next_cursor === null) return;
    cursor = page.next_cursor;
  }
}
