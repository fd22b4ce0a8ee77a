import { expect } from 'chai';
import type { ElementRole, GuardrailCategory } from '../../shared/desktop/protocol';
import { GUARDRAIL_CATEGORIES } from '../../shared/desktop/protocol';
import { elementCategory, type ElementToClassify } from '../../shared/guardrails/element-categories';
import { initialState, type ComputerState } from '../../shared/simulator/computer-state';
import { APPS } from '../../shared/simulator/apps.catalog';
import { KNOWN_HOSTS } from '../../shared/simulator/web-pages.catalog';
import { layoutScreen, type PlacedElement } from '../../shared/simulator/screen-layout';

/** A label on a button, or [role, label] for another role. */
type Example = string | [ElementRole, string];

const asElement = (example: Example): ElementToClassify =>
  typeof example === 'string' ? { role: 'button', label: example } : { role: example[0], label: example[1] };

const describeElement = (element: ElementToClassify): string =>
  `${element.role} "${element.label}"${element.dialog ? ` in dialog "${element.dialog}"` : ''}`;

/** Every example that does not come out as expected, one line each, so a failure names its labels. */
function misjudged(cases: Array<[ElementToClassify, GuardrailCategory | null]>): string[] {
  return cases
    .map(([element, expected]) => [element, expected, elementCategory(element)] as const)
    .filter(([, expected, actual]) => actual !== expected)
    .map(([element, expected, actual]) => `${describeElement(element)}: expected ${expected}, got ${actual}`);
}

function expectJudged(cases: Array<[ElementToClassify, GuardrailCategory | null]>): void {
  const wrong = misjudged(cases);
  expect(wrong, `${wrong.length} misjudged (role "label": expected, got)`).to.deep.equal([]);
}

/** Labels from shops, mail and chat apps, GTK/GNOME/Xfce dialogs, Chromium settings and package managers. */
const CORPUS: Record<GuardrailCategory, Example[]> = {
  purchase: [
    'Buy now',
    'Buy it now', // eBay
    '🛒 Buy now',
    'Buy Now – $20.00',
    'Buy for €9,99',
    'Buy with Google Pay',
    'Place order',
    'Place your order', // Amazon
    'Submit order',
    'Order now',
    'Pay $20.00',
    'Pay now',
    'Pay with PayPal',
    'Confirm and pay',
    'Checkout (3)',
    'Check out',
    'Proceed to checkout',
    'Continue to payment',
    'Complete purchase',
    'Confirm purchase',
    'Purchase',
    '$4.99', // an app store's price button
    'Subscribe for $9.99/month',
    'Upgrade to Premium',
    'Rent HD $3.99',
    'Pre-order',
    'Donate',
    'Send money',
    'Book now',
    ['link', 'Buy now'],
  ],
  send: [
    'Send',
    'Send message',
    'Send email',
    'Send now',
    '✉ Send',
    'Send (Ctrl+Enter)',
    'Send \u202a(Ctrl-Enter)\u202c', // Gmail's name, with its direction marks
    'Yes, send it',
    'Send invitation',
    'Resend',
    'Schedule send',
    'Post',
    'Post reply',
    'Post comment',
    'Comment', // GitHub's, which submits
    'Publish',
    'Submit',
    'Submit form',
    'Tweet',
    'Repost',
    'Share now',
    ['menu_item', 'Send feedback'], // Chromium's Help menu
    ['menu_item', 'Send to…'], // Nautilus
    ['icon', 'Send'],
  ],
  delete: [
    'Delete',
    '_Delete', // a GTK mnemonic
    'Delete 3 files',
    'Delete permanently',
    'Permanently delete',
    'Delete forever', // Gmail
    'Yes, delete',
    '🗑 Delete conversation',
    'Delete chat',
    'Delete account',
    'Close account',
    'Move to Trash',
    'Move to Bin',
    'Move to Recycle Bin',
    'Move conversation to trash', // Geary
    'Empty Trash',
    'Empty the Recycle Bin',
    'Empty Deleted Items', // Outlook
    'Remove',
    'Remove from list',
    'Remove app',
    'Uninstall',
    'Clear browsing data', // Chromium
    'Clear history',
    'Discard draft',
    'Erase disk',
    'Format Disk…', // GNOME Disks
    'Trash',
    ['menu_item', 'Move to Trash'],
    ['icon', 'Trash'], // a desktop's or dock's Trash: a drop target
    ['icon', 'Recycle Bin'],
    ['link', 'Delete'],
  ],
  install: [
    'Install',
    '+ Install',
    'Install (14.2 MB)',
    'Install now',
    'Install update',
    'Install updates',
    'Install anyway', // GNOME Software, an unverified app
    'Install for all users',
    'Install package',
    'Reinstall',
    'Add to Chrome', // Chrome Web Store
    'Add to Firefox',
    'Add extension', // Chromium's dialog
    'Add to Home screen',
    'Restart & update',
    'Restart and install updates',
    'Download and install',
    'Update all', // GNOME Software
    'Get', // Microsoft Store
    'Run installer',
    'Agree and install', // installing is what is at stake
    ['icon', 'Install Ubuntu 22.04.3 LTS'], // the live session's desktop icon
  ],
  security: [
    'Change password',
    'Reset password',
    'Save password',
    'Change PIN',
    'Two-factor authentication',
    ['item', 'Two-factor authentication'], // a switch
    'Turn on 2-Step Verification',
    'Set up authenticator app',
    'Add passkey',
    'Manage security keys',
    'Regenerate recovery codes',
    'Turn off firewall',
    'Turn on firewall',
    ['item', 'Firewall'],
    'Encryption',
    ['item', 'Screen Lock'], // GNOME Settings
    ['link', 'Passwords'], // Chromium's autofill settings
    'Password manager',
    ['link', 'Privacy and security'], // Chromium's settings
    ['item', 'Security'], // a settings tab
    ['link', 'Sign-in & security'],
    ['link', 'Security and login'], // Facebook
    'Sign out of all other sessions',
    'Revoke access',
    'Change email address',
  ],
  terms: [
    'I agree',
    'I Agree', // NSIS installers, Steam
    'I accept',
    'I consent',
    'Agree', // an installer's licence sheet
    'Accept terms',
    'Accept terms and conditions',
    'Accept the license agreement',
    'Accept EULA',
    'Accept privacy policy',
    'Agree and continue',
    'Accept & continue',
    'Agree & Join', // LinkedIn
    ['item', 'I agree to the Terms of Service'], // a check box
    ['item', 'I accept the terms in the License Agreement'], // an MSI installer's check box
    ['item', 'I accept the agreement'], // Inno Setup's radio button
    ['item', 'I have read and agree to the Terms'],
  ],
};

/** Look-alikes that must give null: they name a category's words without doing its act. */
const LOOK_ALIKES: Example[] = [
  // Shopping without paying.
  'Add to cart',
  'Add to basket',
  'Add to wishlist',
  'Add to cart – $20.00',
  ['link', 'Cart'],
  'Cart',
  'View cart',
  ['link', 'View order'],
  ['link', 'Purchase history'],
  ['link', 'Order details'],
  ['link', 'Orders'],
  ['link', 'Payment methods'],
  ['link', 'PayPal'],
  ['link', 'Buying guide'],
  ['link', 'Blue T-shirt $20.00'], // a product card
  ['link', 'Check out our deals'],
  'Subscribe', // a channel or a newsletter
  // Sending words that send nothing.
  ['link', 'Send feedback form link'], // a link navigates to the form
  ['link', 'Send'],
  'Sent',
  ['item', 'Sent'],
  'Sending…',
  'Reply',
  'Forward',
  'Share',
  'Copy link',
  'Send to back', // arranging in a drawing app
  'Send backward',
  "Don't send",
  // Deleting words that delete nothing.
  ['link', 'Delete account help'],
  ['item', 'Deleted items'],
  ['item', 'Recently deleted'],
  ['item', 'Trash'], // the Trash folder in a sidebar opens it
  ['link', 'Trash'],
  'Undo delete',
  'Undo',
  'Restore',
  "Don't delete",
  'Clear', // a search field's clear button
  ['link', 'How to delete files'],
  // Installing words that install nothing.
  ['link', 'Installation guide'],
  ['link', 'Install instructions'],
  'Installed',
  'Installing…',
  'Update', // as often a web form's save
  'Download',
  'Mark for installation', // Synaptic marks; Apply installs
  // Terms read, not accepted.
  ['link', 'Terms of service'],
  ['link', 'Terms and conditions'],
  ['link', 'Privacy policy'],
  ['link', 'License'],
  ['item', 'I do not accept the agreement'],
  'I disagree',
  'Decline',
  'Accept', // an invitation, a call: nothing to agree to outside a dialog
  'Accept all cookies',
  'Reject all',
  // Security words that change no setting.
  ['link', 'Security tips'],
  ['link', 'Learn more about two-factor authentication'],
  'Sign in',
  'Sign out',
  'Log in',
  ['link', 'Forgot password?'],
  'Show password',
  'Pin tab',
  // Generic buttons outside a dialog, system parts and files.
  'OK',
  'Yes',
  'Continue',
  'Next',
  'Cancel',
  'Close',
  'Not now',
  'No thanks',
  'Save',
  'Open',
  'Back',
  'Do Not Disturb',
  'Wi-Fi',
  ['icon', 'Mail'],
  ['icon', 'App Store'],
  ['icon', 'Microsoft Store'],
  ['icon', 'System Settings'],
  ['item', 'Inbox (3)'],
  ['item', 'report.txt'],
  ['item', 'Delete me.txt'], // a file, whatever it is called
  ['icon', 'install.sh'],
  ['item', 'Pay invoice.pdf'],
  '',
  '🗑',
];

/** A generic button takes its dialog's category; backing out never does. [dialog title, label, category]. */
const DIALOGS: Array<[string, string, GuardrailCategory | null]> = [
  ['Delete 3 files?', 'OK', 'delete'],
  ['Delete 3 files?', 'Yes', 'delete'],
  ['Delete 3 files?', 'Cancel', null],
  ['Delete 3 files?', 'No', null],
  ['Delete 3 files?', 'Close', null],
  ['Empty the Trash?', 'Empty Trash', 'delete'],
  ['Empty the Trash?', 'Cancel', null],
  ['Empty all items from Trash?', 'Empty Trash', 'delete'], // Nautilus
  ['Move to Trash?', 'OK', 'delete'],
  ['Are you sure you want to permanently delete “report.txt”?', 'Yes', 'delete'], // Thunar
  ['Confirm purchase', 'Continue', 'purchase'],
  ['Confirm purchase', 'OK', 'purchase'],
  ['Confirm your purchase', 'Confirm', 'purchase'],
  ['Pay with Google Pay', 'Continue', 'purchase'],
  ['Send message without a subject?', 'Send anyway', 'send'],
  ['Send message without a subject?', 'OK', 'send'],
  ['Send message without a subject?', "Don't send", null],
  ['License Agreement', 'Accept', 'terms'],
  ['End User License Agreement', 'Continue', 'terms'],
  ['License Agreement', 'Decline', null],
  ['Install untrusted software?', 'Continue', 'install'],
  ['Add “uBlock Origin”?', 'Add extension', 'install'], // Chromium
  ['Add “uBlock Origin”?', 'Cancel', null],
  ['Change password', 'Save', 'security'],
  ['Save password?', 'Save', 'security'], // Chromium's bubble
  // A failure or an outcome: OK only dismisses it.
  ['Could not delete “report.txt”', 'OK', null],
  ['Message sent', 'OK', null],
  ['Installation complete', 'OK', null],
  ['Payment failed', 'OK', null],
  // Dialogs that ask nothing of a category.
  ['Quit without saving?', 'Yes', null],
  ['Save changes to “notes.txt” before closing?', 'Save', null],
  ['Cancel download?', 'Yes', null],
  ['Incoming call', 'Accept', null],
];

const NOT_ACTING: readonly ElementRole[] = ['static_text', 'text_field', 'password_field', 'text_area', 'address_bar'];

describe('elementCategory: the element classifier', () => {
  for (const category of GUARDRAIL_CATEGORIES) {
    it(`gives ${category} to each of its ${CORPUS[category].length} real-world labels`, () => {
      expect(CORPUS[category].length).to.be.at.least(12);
      expectJudged(CORPUS[category].map((example) => [asElement(example), category]));
    });
  }

  it(`gives null to each of ${LOOK_ALIKES.length} look-alikes`, () => {
    expect(LOOK_ALIKES.length).to.be.at.least(30);
    expectJudged(LOOK_ALIKES.map((example) => [asElement(example), null]));
  });

  it('gives a generic button in a dialog the category of the dialog title, and Cancel, No and Close none', () => {
    expectJudged(DIALOGS.map(([dialog, label, category]) => [{ role: 'button', label, dialog }, category]));
  });

  it('judges nothing a person types into or reads: the same labels as static text or fields give null', () => {
    const labels = GUARDRAIL_CATEGORIES.flatMap((category) => CORPUS[category].slice(0, 6).map((example) => asElement(example).label));
    expectJudged(NOT_ACTING.flatMap((role) => labels.map((label): [ElementToClassify, null] => [{ role, label }, null])));
    expectJudged(NOT_ACTING.map((role): [ElementToClassify, null] => [{ role, label: 'OK', dialog: 'Delete 3 files?' }, null]));
  });

  it('sends only from roles that press: a link named Send navigates', () => {
    expectJudged([
      [{ role: 'button', label: 'Send' }, 'send'],
      [{ role: 'menu_item', label: 'Send' }, 'send'],
      [{ role: 'icon', label: 'Send' }, 'send'],
      [{ role: 'link', label: 'Send' }, null],
      [{ role: 'button', label: 'Send feedback form link' }, 'send'],
      [{ role: 'link', label: 'Send feedback form link' }, null],
    ]);
  });

  it('reads the Trash as a drop target only as an icon, and a price alone as a purchase only on a button', () => {
    expectJudged([
      [{ role: 'icon', label: 'Trash' }, 'delete'],
      [{ role: 'button', label: 'Trash' }, 'delete'],
      [{ role: 'item', label: 'Trash' }, null],
      [{ role: 'link', label: 'Trash' }, null],
      [{ role: 'button', label: '$4.99' }, 'purchase'],
      [{ role: 'menu_item', label: '$4.99' }, 'purchase'],
      [{ role: 'link', label: '$4.99' }, null],
    ]);
  });

  it('names the more serious act when a label names two, and takes the dialog title only for a generic label', () => {
    expectJudged([
      [{ role: 'button', label: 'Submit order' }, 'purchase'],
      [{ role: 'button', label: 'Send $20.00' }, 'purchase'],
      [{ role: 'button', label: 'Delete account' }, 'delete'],
      [{ role: 'button', label: 'Agree and install' }, 'install'],
      [{ role: 'button', label: 'Save and send' }, 'send'],
      [{ role: 'button', label: 'Send', dialog: 'Delete 3 files?' }, 'send'],
      [{ role: 'button', label: 'Keep', dialog: 'Delete 3 files?' }, null],
    ]);
  });
});

/** Every screen the simulator can show, as far as its elements go: each app, page, panel and the dialog. */
function simulatorScreens(): ComputerState[] {
  const states: ComputerState[] = [];
  const add = (change: (state: ComputerState) => void): void => {
    const state = initialState();
    change(state);
    states.push(state);
  };
  add(() => {});
  add((state) => (state.spotlight = { open: true, query: 's' }));
  add((state) => (state.controlCenter.open = true));
  for (const app of APPS) add((state) => (state.windows = [app.name]));
  add((state) => {
    state.windows = ['Files'];
    state.files = { items: ['report.txt', 'Delete me', 'Install'], trash: ['old.txt'], selected: 'report.txt' };
  });
  add((state) => {
    state.windows = ['Files'];
    state.files.trash = ['old.txt'];
    state.dialog = { kind: 'empty-trash', app: 'Files', focus: 'dialog.empty-trash' };
  });
  add((state) => {
    state.windows = ['Settings'];
    state.settings = { firewall: false, changingPassword: true };
  });
  add((state) => {
    state.windows = ['Store'];
    state.store.installed = true;
  });
  for (const host of KNOWN_HOSTS) {
    add((state) => {
      state.windows = ['Browser'];
      state.page = { url: `https://${host}/`, host, cart: 1 };
    });
  }
  return states;
}

function simulatorElements(): Array<{ element: PlacedElement; dialog: string | null }> {
  const seen = new Map<string, { element: PlacedElement; dialog: string | null }>();
  for (const state of simulatorScreens()) {
    for (const os of ['mac', 'windows'] as const) {
      const layout = layoutScreen(state, { os, width: 1440, height: 900 });
      for (const element of layout.elements) {
        // The dialog's elements are the ones its layer places (ids `dialog.*`).
        const dialog = element.id.startsWith('dialog.') ? (layout.dialog?.title ?? null) : null;
        seen.set(`${element.id} ${element.role} ${element.label}`, { element, dialog });
      }
    }
  }
  return [...seen.values()];
}

describe("the simulator's elements and the classifier", () => {
  /** The views that overrule the classifier, each commented where it is set. */
  const OVERRIDES: Record<string, GuardrailCategory | null> = {
    // Opens the dialog "Empty the Trash?"; the dialog's own Empty Trash deletes.
    'files.empty-trash': null,
  };
  const isFile = (id: string): boolean => id.startsWith('files.item:');

  it("gives every element the classifier's category, except the few overrides the views name", () => {
    const drifted = simulatorElements()
      .filter(({ element }) => !(element.id in OVERRIDES) && !isFile(element.id))
      .filter(({ element, dialog }) => element.category !== elementCategory({ role: element.role, label: element.label, dialog }))
      .map(({ element, dialog }) => `${element.id}: ${element.category}, the classifier ${elementCategory({ role: element.role, label: element.label, dialog })}`);
    expect(drifted, drifted.join('\n')).to.deep.equal([]);
    for (const { element } of simulatorElements().filter(({ element }) => element.id in OVERRIDES || isFile(element.id))) {
      expect(element.category, element.id).to.equal(isFile(element.id) ? null : OVERRIDES[element.id]);
    }
  });

  it('keeps the categories the catalogs gave by hand before the classifier (docs/simulator.md)', () => {
    const categorised = Object.fromEntries(
      simulatorElements()
        .filter(({ element }) => element.category !== null)
        .map(({ element }) => [`${element.id} ${element.label}`, element.category]),
    );
    expect(categorised).to.deep.equal({
      'page.buy-now Buy now': 'purchase',
      'page.pay Pay': 'purchase',
      'page.send Send': 'send',
      'mail.send Send': 'send',
      'page.i-agree I agree': 'terms',
      'page.change-password Change password': 'security',
      'page.delete-account Delete account': 'delete',
      'settings.firewall Turn on firewall': 'security',
      'settings.firewall Turn off firewall': 'security',
      'settings.change-password Change password': 'security',
      'settings.save-password Save password': 'security',
      'files.move-to-trash Move to Trash': 'delete',
      'files.trash Trash': 'delete',
      'dialog.empty-trash Empty Trash': 'delete',
      'store.install Install': 'install',
    });
  });
});
