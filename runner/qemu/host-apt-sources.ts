import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The Debian mirror the image is built from: the one this host's own apt uses for the suite, read
 * from `/etc/apt/sources.list` and `/etc/apt/sources.list.d/*` (one-line `.list` files and deb822
 * `.sources` files). No mirror is named in the project's files: an operator's host already says
 * which one it may reach.
 */

export interface AptSource {
  uri: string;
  suites: string[];
  components: string[];
}

/** Every `deb` source of one apt configuration text (either format). */
export function parseAptSources(text: string, format: 'list' | 'sources'): AptSource[] {
  if (format === 'list') {
    const sources: AptSource[] = [];
    for (const raw of text.split('\n')) {
      const line = raw.replace(/#.*/, '').trim();
      // deb [options] uri suite [component…]
      const match = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s*(.*)$/.exec(line);
      if (match) sources.push({ uri: match[1], suites: [match[2]], components: match[3].split(/\s+/).filter(Boolean) });
    }
    return sources;
  }
  const sources: AptSource[] = [];
  for (const stanza of text.split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    let last = '';
    for (const raw of stanza.split('\n')) {
      if (raw.startsWith('#')) continue;
      if (/^\s/.test(raw) && last) {
        fields.set(last, `${fields.get(last)} ${raw.trim()}`);
        continue;
      }
      const match = /^([A-Za-z-]+):\s*(.*)$/.exec(raw);
      if (match) {
        last = match[1].toLowerCase();
        fields.set(last, match[2].trim());
      }
    }
    const types = (fields.get('types') ?? '').split(/\s+/);
    if (!types.includes('deb') || fields.get('enabled')?.toLowerCase() === 'no') continue;
    const words = (name: string): string[] => (fields.get(name) ?? '').split(/\s+/).filter(Boolean);
    for (const uri of words('uris')) sources.push({ uri, suites: words('suites'), components: words('components') });
  }
  return sources;
}

/** The host's apt sources, in the order apt reads them. */
export function hostAptSources(etcApt = '/etc/apt'): AptSource[] {
  const sources: AptSource[] = [];
  const read = (file: string): string | null => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return null;
    }
  };
  const main = read(path.join(etcApt, 'sources.list'));
  if (main) sources.push(...parseAptSources(main, 'list'));
  let entries: string[] = [];
  try {
    entries = readdirSync(path.join(etcApt, 'sources.list.d')).sort();
  } catch {
    // No folder: only sources.list.
  }
  for (const entry of entries) {
    const format = entry.endsWith('.list') ? 'list' : entry.endsWith('.sources') ? 'sources' : null;
    const text = format ? read(path.join(etcApt, 'sources.list.d', entry)) : null;
    if (format && text) sources.push(...parseAptSources(text, format));
  }
  return sources;
}

/** The mirror (URI) that serves `suite` with the `main` component on this host; throws when there is none. */
export function hostDebianMirror(suite: string, sources: AptSource[] = hostAptSources()): string {
  const found = sources.find((source) => source.suites.includes(suite) && source.components.includes('main') && /^https?:\/\//.test(source.uri));
  if (!found) throw new Error(`This host's apt sources (/etc/apt) have no http(s) mirror for Debian "${suite}" main; the image is built from the host's own mirror.`);
  return found.uri;
}
