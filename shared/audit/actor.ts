/** The spec's Actor: who did something. Null when nobody is recorded (session token, service). */
export type Actor =
  | { type: 'user'; email: string | null }
  | { type: 'api_key'; key_id: string; name: string | null; prefix: string | null }
  | null;

/** Who a change is made for and by: the org, and the actor recorded in the audit log. */
export interface Caller {
  orgId: string;
  actor: Actor;
}
