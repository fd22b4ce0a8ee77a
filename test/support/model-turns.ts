import { expect } from 'chai';
import { createCanvas } from '@napi-rs/canvas';
import type { Observation } from '../../shared/desktop/protocol';
import { ModelError, type ModelTurnInput } from '../../shared/models/model.types';

/**
 * What the vendor backend tests give a model turn: a real PNG of the screen (so that scaling and
 * encoding are exercised for real), a shop page open in Safari, and a turn's input around them.
 */

/** A real PNG of one colour. */
export function solidPng(width = 1440, height = 900, colour = '#3366cc'): Buffer {
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = colour;
  ctx.fillRect(0, 0, width, height);
  return canvas.toBuffer('image/png');
}

/** The screen at 1440×900. */
export const SCREEN = solidPng();

/** Retries fast enough for tests. */
export const FAST_RETRY = { retries: 2, baseDelayMs: 5, maxDelayMs: 1000 };

/** Safari showing shop.example.com, focused. */
export function shopObservation(extra: Partial<Observation> = {}): Observation {
  return {
    width: 1440,
    height: 900,
    windows: [{ app: 'Safari', title: 'Shop', bounds: { x: 0, y: 0, width: 1440, height: 900 }, system: false, url: 'https://shop.example.com/' }],
    focused_app: 'Safari',
    focused: null,
    elements: null,
    dialog: null,
    text: null,
    visible_labels: [],
    ...extra,
  };
}

/** A first turn of "Buy the blue shirt" on Claude Sonnet at low effort, with `overrides`. */
export function turnInput(overrides: Partial<ModelTurnInput> = {}): ModelTurnInput {
  return {
    model: 'claude-sonnet-4-6',
    effort: 'low',
    system: 'Service rules.\n\nAgent instructions.',
    prompt: 'Buy the blue shirt on shop.example.com',
    state: null,
    observation: shopObservation(),
    screenshot: SCREEN,
    lastOutcome: null,
    tools: { http: [{ name: 'lookup_order', description: 'Finds an order by id' }], files: { enabled: true, read_only: false } },
    display: { width: 1440, height: 900, os: 'mac' },
    ...overrides,
  };
}

/** The `ModelError` that `promise` fails with (the test fails when it does not). */
export async function rejection(promise: Promise<unknown>): Promise<ModelError> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(ModelError);
    return err as ModelError;
  }
  throw new Error('expected the call to fail');
}
