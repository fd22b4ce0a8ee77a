import type { Knex } from 'knex';

/**
 * One billing account per org: its plan, its balance (kept equal to the sum of its ledger, both
 * written in one transaction under this row's lock), its card at the payment provider and its
 * auto top-up settings. The row lock is also what serialises an org's task starts (the
 * concurrency limit). Made with the org (on DESKHAND_DEFAULT_PLAN), or on first use for orgs
 * older than billing.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('billing_accounts', (t) => {
    t.text('org_id').primary().references('orgs.id').onDelete('CASCADE');
    t.text('plan_id').notNullable().defaultTo('free').references('plans.id');
    t.bigInteger('balance_cents').notNullable().defaultTo(0);
    t.text('provider_customer_id').unique();
    // none: no card saved; ok; needs_attention: a payment failed (402 card_needs_attention until the card is updated).
    t.text('card_status').notNullable().defaultTo('none');
    t.text('payment_method_id');
    // Moves on with every change of the card's state: part of an auto top-up's idempotency key, so
    // that a try after a decline and a card update is a new payment, not the declined one replayed.
    t.integer('card_version').notNullable().defaultTo(0);
    t.boolean('auto_topup_enabled').notNullable().defaultTo(false);
    t.integer('auto_topup_amount_cents').notNullable().defaultTo(2000);
    t.integer('auto_topup_threshold_cents').notNullable().defaultTo(500);
    t.integer('auto_topup_monthly_limit_cents').notNullable().defaultTo(10000);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw("alter table billing_accounts add constraint billing_accounts_card_status check (card_status in ('none', 'ok', 'needs_attention'))");
  await knex.raw('create index billing_accounts_plan on billing_accounts (plan_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('billing_accounts');
}
