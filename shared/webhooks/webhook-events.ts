/** The type of the event `POST /v1/webhook/test` sends: outside the ten, never filtered out. */
export const TEST_EVENT_TYPE = 'webhook.test';

/**
 * Whether an endpoint's `events` filter lets an event type through: an empty filter takes
 * every type, and the test event always passes.
 */
export function filterAccepts(events: readonly string[] | null, type: string): boolean {
  return type === TEST_EVENT_TYPE || !events || events.length === 0 || events.includes(type);
}
