import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import type { PaymentProvider } from './payment-provider';
import { BillingReadsService } from './billing-reads.service';
import { BillingLeversService } from './billing-levers.service';
import { PaymentsService } from './payments.service';
import { ProviderWebhookService } from './provider-webhook.service';
import { StartAdmissionService } from './start-admission.service';
import { MeteringService } from './metering.service';

export interface BillingServicesDeps {
  db: Knex;
  clock: Clock;
  /** Null without STRIPE_SECRET_KEY: paid features answer 503 `payments_unavailable`, the free plan works. */
  provider: PaymentProvider | null;
  logger: Logger;
  /** The plan a new org starts on (DESKHAND_DEFAULT_PLAN). */
  defaultPlanId: string;
}

/** Billing, one service per concern (docs/billing.md); a call site names the one it uses. */
export interface BillingServices {
  /** Plans, usage, the account and its ledger. */
  reads: BillingReadsService;
  /** What an owner or the operator changes: plan, credit, auto top-up settings; a new org's account. */
  levers: BillingLeversService;
  /** The payment provider: card setup, top-ups, auto top-ups. */
  payments: PaymentsService;
  /** The provider's webhooks, verified and handled once per event. */
  providerWebhook: ProviderWebhookService;
  /** Whether a task on a person's computer may start: 402 and 429. */
  admission: StartAdmissionService;
  /** Task minutes and machine minutes into the ledger. */
  metering: MeteringService;
}

/** Builds billing's services on one set of dependencies (the container calls it once per process). */
export function createBillingServices(deps: BillingServicesDeps): BillingServices {
  const { db, clock, provider, logger, defaultPlanId } = deps;
  const paymentsAvailable = provider !== null;
  const reads = new BillingReadsService({ db, clock, paymentsAvailable, defaultPlanId });
  const payments = new PaymentsService({ db, clock, provider, logger, defaultPlanId, reads });
  return {
    reads,
    levers: new BillingLeversService({ db, clock, paymentsAvailable, defaultPlanId, reads }),
    payments,
    providerWebhook: new ProviderWebhookService({ db, provider, logger, payments }),
    admission: new StartAdmissionService({ db, clock, defaultPlanId, reads, payments }),
    metering: new MeteringService({ db, clock, defaultPlanId }),
  };
}
