import type { Capabilities } from '../desktop/protocol';
import type { SimulatedOs } from './apps.catalog';

/** The smallest and largest screens a simulated computer reports (smaller cannot hold an app window with its fields and buttons). */
export const MIN_SCREEN = Object.freeze({ width: 640, height: 480 });
export const MAX_SCREEN = Object.freeze({ width: 7680, height: 4320 });

/** The first app version that reports page addresses and element info on a Mac. */
export const ELEMENT_INFO_SINCE = '1.0.20';

/** Plain `X.Y.Z`: the service refuses anything else in a hello. */
const VERSION = /^(\d+)\.(\d+)\.(\d+)$/;

/** True for an `X.Y.Z` app version. */
export function isAppVersion(value: string): boolean {
  return VERSION.test(value);
}

/**
 * Compares two `X.Y.Z` versions numerically: negative when `a` is older. A value that is not a
 * version sorts before every version, so it never gains what newer apps can report.
 */
export function compareAppVersions(a: string, b: string): number {
  const pa = VERSION.exec(a);
  const pb = VERSION.exec(b);
  if (!pa || !pb) return (pa ? 1 : 0) - (pb ? 1 : 0);
  for (let i = 1; i <= 3; i++) {
    const diff = Number(pa[i]) - Number(pb[i]);
    if (diff !== 0) return diff;
  }
  return 0;
}

/**
 * What an app of this system and version can report (docs/simulator.md, "What each computer reports"): page addresses and
 * element info need a Mac with app 1.0.20 or later, and both are read through Accessibility, so a
 * Mac without that permission reports neither. `accessibility` is passed through on Windows too,
 * where `false` stands for an app that cannot read the screen at all.
 */
export function capabilitiesFor(os: SimulatedOs, appVersion: string, accessibility: boolean): Capabilities {
  const modernMac = os === 'mac' && compareAppVersions(appVersion, ELEMENT_INFO_SINCE) >= 0;
  return {
    accessibility,
    page_addresses: modernMac && accessibility,
    element_info: modernMac && accessibility,
  };
}
