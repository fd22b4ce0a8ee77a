import type { Knex } from 'knex';

/**
 * The append-only ledger of an org's money and minutes: credits (operator), top-ups (card),
 * charges per task minute and per machine minute. `amount_cents` is signed (credits positive,
 * charges negative or 0 for a free minute); `balance_after_cents` is the account's balance once
 * the row is written, so that the running sum can be checked row by row. Rows are never updated.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('billing_ledger', (t) => {
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('kind').notNullable();
    t.bigInteger('amount_cents').notNullable();
    t.bigInteger('balance_after_cents').notNullable();
    // Minutes only: the task or machine-using try charged, and which of its minutes (1, 2, …).
    t.text('task_id');
    t.text('try_id');
    t.integer('minute');
    t.boolean('free').notNullable().defaultTo(false);
    // Top-ups only: the provider's payment, credited once however often its webhook comes.
    t.text('payment_id');
    t.text('description').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw("alter table billing_ledger add constraint billing_ledger_kind check (kind in ('credit', 'top_up', 'auto_top_up', 'task_minute', 'machine_minute'))");
  // A minute is charged once, whoever charges it (the meter, the task's end) and however often.
  await knex.raw('create unique index billing_ledger_task_minute on billing_ledger (task_id, minute) where task_id is not null');
  await knex.raw('create unique index billing_ledger_try_minute on billing_ledger (try_id, minute) where try_id is not null');
  await knex.raw('create unique index billing_ledger_payment on billing_ledger (payment_id) where payment_id is not null');
  // The reads: an org's ledger newest first, and its minutes of a month.
  await knex.raw('create index billing_ledger_org on billing_ledger (org_id, seq)');
  await knex.raw('create index billing_ledger_org_minutes on billing_ledger (org_id, created_at) where minute is not null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('billing_ledger');
}
