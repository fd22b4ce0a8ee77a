import { Command, InvalidArgumentError } from 'commander';
import { ConfigError, loadConfig } from '../shared/config';
import type { Container } from '../shared/container';
import { PROCESS_TYPES, type ProcessType } from '../shared/queues/catalog';
import { registerDesktopCommand } from './desktop.command';
import { registerRunnerCommand } from './runner.command';
import { registerEvalsCommand } from './evals.command';
import { registerTasksCommand } from './tasks.command';
import { projectVersion } from './project-version';
import { startupLines } from './startup-lines';
import { ROLES, type Role } from '../shared/auth/roles';

/** Prints one JSON object on stdout, the CLI's machine-readable answer. */
function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

// The service's modules load when a command needs them, not for every `npx deskhand` (`--help`,
// the desktop client, the reference runner and the evals commands use none of them).
const serviceModules = {
  container: () => require('../shared/container') as typeof import('../shared/container'),
  knex: () => require('../shared/db/knex') as typeof import('../shared/db/knex'),
  start: () => require('./start') as typeof import('./start'),
};

/** Runs `work` with a container and closes it after, whatever happens. */
async function withContainer<T>(work: (container: Container) => Promise<T>): Promise<T> {
  const container = serviceModules.container().createContainer(loadConfig(), { dbPoolMax: 2 });
  try {
    return await work(container);
  } finally {
    await container.close();
  }
}

function wholeCents(value: string): number {
  if (!/^-?\d{1,10}$/.test(value) || Number(value) === 0) throw new InvalidArgumentError('a whole number of cents, not 0 (e.g. 2000 for $20.00)');
  return Number(value);
}

function processTypes(value: string, previous: ProcessType[] = []): ProcessType[] {
  const types = value.split(',').map((type) => type.trim()).filter(Boolean);
  for (const type of types) {
    if (!(PROCESS_TYPES as readonly string[]).includes(type)) {
      throw new InvalidArgumentError(`unknown process type "${type}"; one of ${PROCESS_TYPES.join(', ')}`);
    }
  }
  return [...previous, ...(types as ProcessType[])];
}

async function printDevelopmentKeyOnce(container: Container): Promise<void> {
  if (container.config.env !== 'development' || (await container.orgs.any())) return;
  const { org, secret } = await container.orgs.create('Development org');
  const base = container.config.baseUrl;
  process.stdout.write(
    [
      '',
      `Created the development org ${org.org_id} and its API key (shown once; \`npx deskhand keys create --org ${org.org_id} --name NAME\` makes more):`,
      '',
      `  ${secret}`,
      '',
      'Try it:',
      `  curl -H "Authorization: Bearer ${secret}" ${base}/v1/agents`,
      '',
    ].join('\n'),
  );
}

export function buildProgram(): Command {
  const program = new Command('deskhand')
    .description('Deskhand: run AI agents on people\'s computers')
    .version(projectVersion(), '-V, --version', 'print the version')
    // Only before a command: `evals run --version N` is that command's own option.
    .enablePositionalOptions()
    .showHelpAfterError();

  program
    .command('migrate')
    .description('create the database if needed and apply pending migrations')
    .action(async () => {
      // Straight to PostgreSQL when DATABASE_URL is a pooler (DATABASE_MIGRATION_URL).
      const applied = await serviceModules.knex().migrateLatest(loadConfig().databaseMigrationUrl);
      process.stderr.write(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}\n` : 'database is up to date\n');
    });

  program
    .command('start')
    .description('run the service: every process type, or only those named')
    .option('--only <types>', `comma-separated process types (${PROCESS_TYPES.join(', ')}); repeatable`, processTypes)
    .option('--no-migrate', 'do not apply migrations first (the Procfile release step does)')
    .action(async (options: { only?: ProcessType[]; migrate: boolean }) => {
      const config = loadConfig();
      if (options.migrate) await serviceModules.knex().migrateLatest(config.databaseMigrationUrl);
      const types = options.only?.length ? [...new Set(options.only)] : PROCESS_TYPES;
      const running = await serviceModules.start().startDeskhand(config, types);
      // Signals are handled from the moment the process serves, before anything is printed.
      const shutdown = (signal: string) => {
        running.container.logger.info({ signal }, 'shutting down');
        running.stop().then(({ clean }) => process.exit(clean ? 0 : 1));
      };
      process.once('SIGTERM', () => shutdown('SIGTERM'));
      process.once('SIGINT', () => shutdown('SIGINT'));
      if (config.allowPrivateUrls) running.container.logger.warn('DESKHAND_ALLOW_PRIVATE_URLS=1: webhook and tool URLs may be plain http and private addresses');
      process.stdout.write(startupLines(config, types, running.web?.port ?? null));
      if (types.includes('web')) await printDevelopmentKeyOnce(running.container);
    });

  const orgs = program.command('orgs').description('organisations');
  orgs
    .command('create')
    .description('create an org and its first API key; prints { org_id, name, api_key, key_id }')
    .requiredOption('--name <name>', 'the org\'s name')
    .action(async (options: { name: string }) => {
      await withContainer(async (container) => {
        const { org, apiKey, secret } = await container.orgs.create(options.name);
        printJson({ org_id: org.org_id, name: org.name, api_key: secret, key_id: apiKey.key_id, created_at: org.created_at });
      });
    });

  orgs
    .command('list')
    .description('list every org, oldest first; prints a JSON array')
    .action(async () => {
      await withContainer(async (container) => printJson(await container.orgs.list()));
    });

  orgs
    .command('set-plan')
    .description('put an org on a plan (any plan, self-serve or not; docs/billing.md); prints the plan')
    .requiredOption('--org <org_id>', 'the org')
    .requiredOption('--plan <plan_id>', 'a plan id (free, pay_as_you_go, enterprise, …)')
    .action(async (options: { org: string; plan: string }) => {
      await withContainer(async (container) => {
        if (!(await container.orgs.exists(options.org))) throw new Error(`no org ${options.org}`);
        const plan = await container.billing.levers.setPlan(options.org, options.plan, { orgId: options.org, actor: null }, { operator: true });
        printJson({ org_id: options.org, plan });
      });
    });

  orgs
    .command('credit')
    .description("add to an org's balance (negative: take back); prints the ledger entry and the balance")
    .requiredOption('--org <org_id>', 'the org')
    .requiredOption('--cents <n>', 'whole cents, e.g. 2000 for $20.00', wholeCents)
    .option('--note <text>', 'what the ledger entry says')
    .action(async (options: { org: string; cents: number; note?: string }) => {
      await withContainer(async (container) => {
        if (!(await container.orgs.exists(options.org))) throw new Error(`no org ${options.org}`);
        const entry = await container.billing.levers.credit(options.org, options.cents, { orgId: options.org, actor: null }, options.note);
        printJson({ org_id: options.org, balance_cents: entry.balance_after_cents, entry });
      });
    });

  const keys = program.command('keys').description('API keys');
  keys
    .command('create')
    .description('create an API key for an org; prints the key once')
    .requiredOption('--org <org_id>', 'the org')
    .requiredOption('--name <name>', 'a name to tell keys apart')
    .action(async (options: { org: string; name: string }) => {
      await withContainer(async (container) => {
        if (!(await container.orgs.exists(options.org))) throw new Error(`no org ${options.org}`);
        const { apiKey, secret } = await container.db.transaction((trx) => container.apiKeys.create(trx, options.org, options.name, null));
        printJson({ ...apiKey, api_key: secret });
      });
    });
  keys
    .command('list')
    .description("list an org's API keys (revoked ones too; never their secrets); prints a JSON array")
    .requiredOption('--org <org_id>', 'the org')
    .action(async (options: { org: string }) => {
      await withContainer(async (container) => {
        if (!(await container.orgs.exists(options.org))) throw new Error(`no org ${options.org}`);
        printJson(await container.apiKeys.list(options.org));
      });
    });
  keys
    .command('revoke')
    .description('revoke an API key; every process refuses it at once')
    .argument('<key_id>', 'the key\'s id (key_…)')
    .action(async (keyId: string) => {
      await withContainer(async (container) => printJson(await container.apiKeys.revoke(keyId, null)));
    });

  const runners = program.command('runners').description('runners (docs/runners.md)');
  runners
    .command('create')
    .description('register a cloud runner (the service\'s own, serving every org); prints { runner_id, token, … } once')
    .option('--cloud', 'a cloud runner (an org registers its own with POST /v1/runners)')
    .requiredOption('--name <name>', 'the runner\'s name, 1 to 80 characters')
    .action(async (options: { cloud?: boolean; name: string }) => {
      if (!options.cloud) throw new Error('only cloud runners are made here (--cloud); an org registers its own with POST /v1/runners');
      await withContainer(async (container) => {
        const { runner, token } = await container.runners.createCloud(options.name);
        printJson({ ...runner, token });
      });
    });

  runners
    .command('revoke')
    .description('revoke a cloud runner: its token stops working and it is disconnected at once (an org deletes its own with DELETE /v1/runners/{id})')
    .argument('<runner_id>', 'the cloud runner\'s id (rn_…)')
    .action(async (runnerId: string) => {
      await withContainer(async (container) => printJson(await container.runners.revokeCloud(runnerId)));
    });

  const users = program.command('users').description('people of the console (docs/console.md)');
  users
    .command('create')
    .description(
      'add a person to an org with a role (the first owner, say); prints { user_id, email, role, sign_in_url, … } with a one-time link: ' +
        'a new address signs in with it; an address that already has an account gets an invitation it accepts by signing in as itself ("joined": "invited")',
    )
    .requiredOption('--org <org_id>', 'the org')
    .requiredOption('--email <email>', 'the person\'s email address')
    .requiredOption('--role <role>', 'owner, admin or member', (value: string) => {
      if (!(ROLES as readonly string[]).includes(value)) throw new InvalidArgumentError('must be owner, admin or member');
      return value as Role;
    })
    .action(async (options: { org: string; email: string; role: Role }) => {
      await withContainer(async (container) => {
        const added = await container.users.addMember({ orgId: options.org, actor: null }, { email: options.email, role: options.role });
        const shown = added.member ?? { user_id: added.userId, email: added.invitation!.email, role: added.invitation!.role, invitation_id: added.invitation!.invitation_id, expires_at: added.invitation!.expires_at };
        printJson({ ...shown, org_id: options.org, joined: added.member ? 'member' : 'invited', sign_in_url: added.signInUrl });
      });
    });
  users
    .command('link')
    .description('a new one-time sign-in link for a member of an org (a lost link or password); prints { user_id, sign_in_url }')
    .requiredOption('--org <org_id>', 'the org')
    .requiredOption('--user <user_id>', 'the person (usr_…)')
    .action(async (options: { org: string; user: string }) => {
      await withContainer(async (container) => printJson({ user_id: options.user, org_id: options.org, sign_in_url: await container.users.signInLink(options.org, options.user) }));
    });

  registerDesktopCommand(program);
  registerRunnerCommand(program);
  registerEvalsCommand(program);
  registerTasksCommand(program);

  return program;
}

buildProgram()
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    const message = error instanceof ConfigError ? `configuration: ${error.message}` : (error as Error).message;
    process.stderr.write(`deskhand: ${message}\n`);
    process.exit(1);
  });
