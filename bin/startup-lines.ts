import type { Config } from '../shared/config';
import type { ProcessType } from '../shared/queues/catalog';

/**
 * What `deskhand start` tells the person who ran it, among the JSON log lines: one line with the
 * address to open and what runs, a warning when no model can run (every task would answer
 * 503 `model_unavailable`, a puzzle on a first run), and a note when production takes no payments.
 */
export function startupLines(config: Readonly<Config>, types: readonly ProcessType[], port: number | null): string {
  const running = types.join(', ');
  const lines: string[] = [];
  if (port === null) {
    lines.push(`Deskhand running (${running}); no web process here, so nothing listens`);
  } else {
    const local = `http://localhost:${port}`;
    const publicUrl = config.baseUrl.replace(/\/+$/, '');
    lines.push(`Deskhand listening on ${local}${publicUrl !== local ? `, reached as ${publicUrl}` : ''} (${running})`);
  }
  if (!canRunAnyModel(config)) {
    lines.push(
      'Warning: no model can run: set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY, or DESKHAND_SCRIPTED_MODELS=1 for the scripted model (docs/simulator.md); until then every task answers 503 model_unavailable',
    );
  }
  if (config.env === 'production' && !config.payments) {
    lines.push('Note: payments are off (no STRIPE_SECRET_KEY): orgs can use their free minutes and credits, but cards and top-ups answer 503 payments_unavailable (docs/billing.md)');
  }
  return `${lines.join('\n')}\n`;
}

/** Whether any model id can run: the scripted model serves them all, else a vendor with a key. */
export function canRunAnyModel(config: Readonly<Config>): boolean {
  return config.scriptedModels || Object.values(config.vendors).some((vendor) => Boolean(vendor?.apiKey));
}
