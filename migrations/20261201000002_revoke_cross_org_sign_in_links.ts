import type { Knex } from 'knex';

/**
 * Before invitations, inviting an address that already had an account added the account to the
 * inviting org and handed the inviter a one-time link that signed in as that person. A link of
 * that kind still unused would still do so: every unused sign-in link of a person who belongs to
 * more than one org is spent here. An operator makes a fresh one with `deskhand users link`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `update sign_in_links set used_at = now()
      where used_at is null
        and user_id in (select user_id from memberships group by user_id having count(*) > 1)`,
  );
}

/** Spent links stay spent: nothing records which were spent here, and none should work again. */
export async function down(): Promise<void> {}
