import { randomString } from '../ids';

/** Capital letters and digits without look-alikes (no 0/O, 1/I/L): easy to read out and type. */
export const PAIRING_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';
export const PAIRING_CODE_PATTERN = '^[A-Z0-9]{4}-[A-Z0-9]{4}$';

/** A new pairing code such as `K7QX-M2PD` (31^8 ≈ 8.5 × 10^11 codes). */
export function newPairingCode(): string {
  const body = randomString(8, PAIRING_ALPHABET);
  return `${body.slice(0, 4)}-${body.slice(4)}`;
}

/** Normalises what a person typed: case, spaces, a missing dash. Null when it cannot be a code. */
export function normalizePairingCode(input: string): string | null {
  const compact = input.toUpperCase().replace(/[\s-]/g, '');
  if (!/^[A-Z0-9]{8}$/.test(compact)) return null;
  return `${compact.slice(0, 4)}-${compact.slice(4)}`;
}
