import type { DeskhandEnv } from '../config';
import { checkUrlShape } from './address-policy';

/**
 * What a refused webhook or tool URL adds for whoever is trying Deskhand on their own machine:
 * in development a local receiver (`http://localhost:4000/hook`) is refused only because
 * `DESKHAND_ALLOW_PRIVATE_URLS` is off. Said only when that switch would have let the URL
 * through, and never in production, where the switch is itself refused.
 */
export function privateUrlHint(url: string, env: DeskhandEnv, allowPrivateUrls: boolean): string {
  if (env !== 'development' || allowPrivateUrls || !checkUrlShape(url, { allowPrivate: true }).ok) return '';
  return ' (in development, DESKHAND_ALLOW_PRIVATE_URLS=1 allows plain http and local or private addresses)';
}
