import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { Role } from '../../shared/auth/roles';
import type { TestService } from './service';

/** Debian's Chromium, installed by `scripts/setup.sh --test`; tests never download a browser. */
export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
}

/**
 * A new person added to the org with a role by the operator (the CLI's `users create`), and their
 * one-time sign-in link pointed at this test service.
 */
export async function addMember(service: TestService, orgId: string, role: Role, email = `${role}-${Math.random().toString(36).slice(2, 10)}@example.com`) {
  const { member, signInUrl } = await service.running.container.users.addMember({ orgId, actor: null }, { email, role });
  if (!member) throw new Error(`${email} already had an account: the operator's add made an invitation`);
  const url = new URL(signInUrl);
  return { userId: member.user_id, email, signInUrl: `${service.baseUrl}${url.pathname}` };
}

/** A console sign-in made with a link, for calls outside a browser: its cookie header and CSRF token. */
export async function consoleSession(service: TestService, orgId: string, role: Role) {
  const member = await addMember(service, orgId, role);
  const response = await fetch(member.signInUrl, { redirect: 'manual' });
  expect(response.status, 'the sign-in link redirects into the console').to.equal(302);
  const setCookie = response.headers.getSetCookie().find((cookie) => cookie.startsWith('deskhand_console='))!;
  const token = setCookie.slice('deskhand_console='.length, setCookie.indexOf(';'));
  const signedIn = (await service.running.container.users.signedIn(token))!;
  return { ...member, token, cookie: `deskhand_console=${token}`, csrfToken: signedIn.csrfToken, setCookie };
}

/** Signs a browser page in with a member's one-time link. */
export async function signInWithLink(page: Page, signInUrl: string): Promise<void> {
  await page.goto(signInUrl);
  await page.waitForURL(/\/console\/account/);
}

const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/**
 * Accessibility problems axe-core finds on the page (serious and critical ones). The page's
 * context must be made with `bypassCSP: true`, or the console's policy refuses the injected script.
 */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: AXE });
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: string[] }> }> }> } }).axe;
    return (await axe.run()).violations;
  });
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id} (${violation.impact}): ${violation.help} at ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}
