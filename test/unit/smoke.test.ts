import { expect } from 'chai';
import { GUARDRAIL_CATEGORIES } from '../../shared/desktop/protocol';
describe('smoke', () => { it('loads', () => { expect(GUARDRAIL_CATEGORIES).to.have.length(6); }); });
