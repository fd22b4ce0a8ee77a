import { appByName, type AppName, type SimulatedOs } from './apps.catalog';
import type { ComputerState } from './computer-state';
import { statusBlock, type View } from './content-blocks';
import { pageView, startPageView } from './web-pages.catalog';

/**
 * What each app's window shows (docs/simulator.md, "Apps"). The Browser's window is its page;
 * its address bar is part of the window's frame and placed by the layout.
 */
export function appView(app: AppName, state: ComputerState, os: SimulatedOs): View {
  const entry = appByName(app)!;
  const defaultTitle = os === 'mac' ? entry.macTitle : entry.windowsTitle;
  const value = (id: string): string => state.fields[id] ?? '';
  switch (app) {
    case 'Browser':
      return state.page.host ? pageView(state.page.host, state) : startPageView(defaultTitle);
    case 'Mail':
      return {
        title: defaultTitle,
        blocks: [
          { kind: 'field', id: 'mail.to', role: 'text_field', label: 'To', value: value('mail.to') },
          { kind: 'field', id: 'mail.subject', role: 'text_field', label: 'Subject', value: value('mail.subject') },
          { kind: 'field', id: 'mail.message', role: 'text_area', label: 'Message', value: value('mail.message'), rows: 8 },
          { kind: 'buttons', buttons: [{ id: 'mail.send', label: 'Send', primary: true }] },
          ...statusBlock(state.status.Mail),
        ],
      };
    case 'Files': {
      const { items, trash, selected } = state.files;
      return {
        title: defaultTitle,
        blocks: [
          {
            kind: 'buttons',
            buttons: [
              { id: 'files.move-to-trash', label: 'Move to Trash', enabled: selected !== null },
              // Only opens the dialog "Empty the Trash?"; its Empty Trash deletes (the classifier
              // would call this one delete too, as an Empty Trash that acts at once would be).
              { id: 'files.empty-trash', label: 'Empty Trash', categoryOverride: null },
            ],
          },
          {
            kind: 'tiles',
            tiles: items.map((item) => ({
              id: `files.item:${item}`,
              label: item,
              role: 'item' as const,
              // A file is a file whatever its name: the classifier knows one only by its extension
              // (a file named "Install" would read as the Store's button).
              categoryOverride: null,
              selected: item === selected,
              draggable: true,
            })),
            trailing: [
              {
                id: 'files.trash',
                label: 'Trash',
                role: 'icon',
                caption: trash.length === 1 ? '1 item' : `${trash.length} items`,
              },
            ],
          },
          ...(items.length === 0 ? [{ kind: 'paragraph' as const, text: 'This folder is empty.' }] : []),
          ...statusBlock(state.status.Files),
        ],
      };
    }
    case 'Settings': {
      const { firewall, changingPassword } = state.settings;
      return {
        title: defaultTitle,
        blocks: [
          { kind: 'heading', text: 'Network & Security' },
          { kind: 'paragraph', text: firewall ? 'Firewall is on.' : 'Firewall is off.' },
          {
            kind: 'buttons',
            buttons: [
              firewall
                ? { id: 'settings.firewall', label: 'Turn off firewall' }
                : { id: 'settings.firewall', label: 'Turn on firewall' },
              { id: 'settings.change-password', label: 'Change password' },
            ],
          },
          ...(changingPassword
            ? [
                {
                  kind: 'field' as const,
                  id: 'settings.new-password',
                  role: 'password_field' as const,
                  label: 'New password',
                  value: value('settings.new-password'),
                },
                {
                  kind: 'buttons' as const,
                  buttons: [{ id: 'settings.save-password', label: 'Save password', primary: true }],
                },
              ]
            : []),
          ...statusBlock(state.status.Settings),
        ],
      };
    }
    case 'Store':
      return {
        title: defaultTitle,
        blocks: [
          { kind: 'heading', text: 'Example Editor' },
          { kind: 'paragraph', text: 'A simple text editor for notes and code. Free.' },
          {
            kind: 'buttons',
            buttons: [
              state.store.installed
                ? { id: 'store.install', label: 'Installed', enabled: false }
                : { id: 'store.install', label: 'Install', primary: true },
            ],
          },
          ...statusBlock(state.status.Store),
        ],
      };
    case 'Notes':
      return {
        title: state.notes.title ?? defaultTitle,
        blocks: [{ kind: 'field', id: 'notes.text', role: 'text_area', label: 'Text', value: value('notes.text'), fill: true }],
      };
  }
}
