import { expect } from 'chai';
import {
  approves,
  CANNOT_SHARE,
  createEvalModels,
  DONT_KNOW,
  scriptedCustomer,
  secretToType,
  stepToClick,
  withoutSecrets,
  type SimulatedCustomer,
} from '../../shared/evals';

const customer: SimulatedCustomer = {
  persona: 'Dana, a busy office manager',
  facts: {
    name: 'Dana Smith',
    'email address': 'dana@example.com',
    plan: 'Pro',
    'card number': { secret: '4242 4242 4242 4242' },
    password: { secret: 'hunter2' },
  },
};

async function ask(question: string, options: string[] = [], who: SimulatedCustomer = customer): Promise<string> {
  const reply = await scriptedCustomer.answer({ customer: who, question, options });
  expect(reply.model).to.equal('scripted');
  return reply.answer;
}

describe('scripted customer: answering questions', () => {
  it('answers with the value of the fact whose label is in the question', async () => {
    expect(await ask('What is your name?')).to.equal('Dana Smith');
    expect(await ask('Which plan are you on?')).to.equal('Pro');
  });

  it('matches labels whatever their case, and labels of several words', async () => {
    expect(await ask('WHAT IS YOUR NAME')).to.equal('Dana Smith');
    expect(await ask('Could you give me your Email Address, please?')).to.equal('dana@example.com');
    expect(await ask('Your email\naddress?')).to.equal('dana@example.com');
  });

  it('matches a label only as a whole word', async () => {
    expect(await ask('What is your username?')).to.equal(DONT_KNOW);
    expect(await ask('Do you like airplanes?')).to.equal(DONT_KNOW);
    expect(await ask('name?')).to.equal('Dana Smith');
    expect(await ask('(plan)')).to.equal('Pro');
    expect(await ask('Name_of the file?')).to.equal(DONT_KNOW);
  });

  it('takes labels with punctuation literally', async () => {
    const odd: SimulatedCustomer = { facts: { 'e-mail': 'dana@example.com', 'acct.no (main)': '123', 'a+b': 'sum' } };
    expect(await ask('Your e-mail?', [], odd)).to.equal('dana@example.com');
    expect(await ask('Your email?', [], odd)).to.equal(DONT_KNOW);
    expect(await ask('The acct.no (main), please', [], odd)).to.equal('123');
    expect(await ask('acctXno (main)', [], odd)).to.equal(DONT_KNOW);
    expect(await ask('what is a+b', [], odd)).to.equal('sum');
  });

  it('takes the first matching fact in the order the facts were written', async () => {
    expect(await ask('What plan is in your name?')).to.equal('Dana Smith');
    const reversed: SimulatedCustomer = { facts: { plan: 'Pro', name: 'Dana Smith' } };
    expect(await ask('What plan is in your name?', [], reversed)).to.equal('Pro');
  });

  it("answers \"I don't know\" when no fact matches, with or without options", async () => {
    expect(await ask('What is your favourite colour?')).to.equal("I don't know");
    expect(await ask('Which colour?', ['Red', 'Blue'])).to.equal("I don't know");
    expect(await ask('What is your name?', [], {})).to.equal("I don't know");
  });

  it('with options, answers the fact only when it is one of them (as the option is written)', async () => {
    expect(await ask('Which plan do you want?', ['Free', 'Pro', 'Team'])).to.equal('Pro');
    expect(await ask('Which plan do you want?', ['free', 'pro'])).to.equal('pro');
  });

  it('with options, answers the first option when the fact is not one of them', async () => {
    expect(await ask('Which plan do you want?', ['Free', 'Team'])).to.equal('Free');
  });

  it('never answers with a secret, even when the question names it', async () => {
    expect(await ask('What is your password?')).to.equal(DONT_KNOW);
    expect(await ask('Please tell me your card number', ['4242 4242 4242 4242'])).to.equal(DONT_KNOW);
    // A secret named first does not hide a spoken fact named later.
    expect(await ask('What password goes with your name?')).to.equal('Dana Smith');
  });
});

describe('scripted customer: secrets, approvals and steps', () => {
  it('types the value of the secret the request names, whatever the case', () => {
    expect(secretToType(customer, 'Please type your password in the field')).to.equal('hunter2');
    expect(secretToType(customer, 'Enter your CARD NUMBER now')).to.equal('4242 4242 4242 4242');
  });

  it('types nothing when the request names no secret, or names a fact that is not secret', () => {
    expect(secretToType(customer, 'Please type your passwords')).to.equal(null);
    expect(secretToType(customer, 'Please type your name')).to.equal(null);
    expect(secretToType({}, 'Please type your password')).to.equal(null);
  });

  it('approves approvals only when it clicks admin prompts', () => {
    expect(approves({ clicks_admin_prompts: true })).to.equal(true);
    expect(approves({ clicks_admin_prompts: false })).to.equal(false);
    expect(approves({})).to.equal(false);
  });

  it('clicks the quoted label a question asks for when it does steps', () => {
    const doer: SimulatedCustomer = { does_steps: true };
    expect(stepToClick(doer, 'Please click "Install"')).to.equal('Install');
    expect(stepToClick(doer, 'Could you CLICK on the “Allow access” button?')).to.equal('Allow access');
    expect(stepToClick(doer, 'Click "OK" then "Done"')).to.equal('OK');
  });

  it('clicks nothing when it does not do steps or the question asks for no click', () => {
    expect(stepToClick({}, 'Please click "Install"')).to.equal(null);
    expect(stepToClick({ does_steps: false }, 'Please click "Install"')).to.equal(null);
    expect(stepToClick({ does_steps: true }, 'Is "Install" shown?')).to.equal(null);
    expect(stepToClick({ does_steps: true }, 'Please click the button')).to.equal(null);
  });
});

describe('the secret guard', () => {
  it('replaces an answer holding any secret value, in any case', () => {
    expect(withoutSecrets(customer, 'Sure, it is hunter2')).to.equal(CANNOT_SHARE);
    expect(withoutSecrets(customer, 'HUNTER2')).to.equal(CANNOT_SHARE);
    expect(withoutSecrets(customer, 'my card is 4242 4242 4242 4242.')).to.equal(CANNOT_SHARE);
  });

  it('leaves other answers alone', () => {
    expect(withoutSecrets(customer, 'Dana Smith')).to.equal('Dana Smith');
    expect(withoutSecrets({ facts: { pin: { secret: '' } } }, 'anything')).to.equal('anything');
  });
});

describe('createEvalModels', () => {
  it('is scripted with DESKHAND_SCRIPTED_MODELS, whatever keys are set', () => {
    const models = createEvalModels({ scripted: true, openai: { apiKey: 'sk-x' }, anthropic: { apiKey: 'sk-ant' } });
    expect(models.vendor).to.equal('scripted');
    expect(models.customer).to.equal(scriptedCustomer);
  });

  it('is scripted without an OpenAI or Anthropic key (empty keys count as none)', () => {
    expect(createEvalModels({ scripted: false }).vendor).to.equal('scripted');
    expect(createEvalModels({ scripted: false, openai: { apiKey: '' }, gemini: { apiKey: 'g' } }).vendor).to.equal('scripted');
  });

  it("uses OpenAI's default model when it has a key, else Anthropic's A1", () => {
    const openai = createEvalModels({ scripted: false, openai: { apiKey: 'sk-x' }, anthropic: { apiKey: 'sk-ant' } });
    expect([openai.vendor, openai.model]).to.deep.equal(['openai', 'gpt-5.4']);
    const anthropic = createEvalModels({ scripted: false, anthropic: { apiKey: 'sk-ant' } });
    expect([anthropic.vendor, anthropic.model]).to.deep.equal(['anthropic', 'claude-sonnet-4-6']);
  });
});
