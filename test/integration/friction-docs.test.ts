import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../shared/config';
import { parseScript } from '../../shared/models/scripted';
import { CATEGORY_DETECTION_SINCE } from '../../shared/guardrails/engine';
import { capabilitiesFor } from '../../shared/simulator';
import { testEnv } from '../support/environment';

/**
 * The docs a first-time user follows point somewhere real: links and anchors resolve, nothing
 * cites a document the repository does not ship, and what they state (the script language, the
 * admin token's length) is what the code does.
 */

const root = path.join(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
/** Another session's documents (benchmark notes), not a first-time user's. */
const NOT_CHECKED = new Set(['docs/benchmarks.md']);
const docs = ['README.md', ...readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)].filter((f) => !NOT_CHECKED.has(f));

function sourceFiles(folder: string): string[] {
  return readdirSync(path.join(root, folder)).flatMap((name) => {
    const relative = `${folder}/${name}`;
    if (statSync(path.join(root, relative)).isDirectory()) return sourceFiles(relative);
    return relative.endsWith('.ts') ? [relative] : [];
  });
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as dashes. */
const anchorOf = (heading: string) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');

describe('docs that point somewhere', () => {
  it('cite no spec/… document and no "Spec:" the repository does not have (docs, README, code comments)', () => {
    const offenders: string[] = [];
    for (const file of [...docs, ...['api', 'shared', 'bin', 'workers'].flatMap(sourceFiles)]) {
      read(file).split('\n').forEach((line, i) => {
        if (/\bspec\/[\w-]+\.md|\bSpec:/.test(line)) offenders.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offenders).to.deep.equal([]);
  });

  it('name no path that does not exist (cli/…) and no placeholder (<MODEL_…>)', () => {
    for (const file of docs) {
      const text = read(file);
      expect(text, file).not.to.match(/<MODEL_[A-Z0-9]+>/);
      for (const [, mentioned] of text.matchAll(/`((?:bin|api|shared|workers|cli|docs|test)\/[\w./-]+\.(?:ts|md))`/g)) {
        expect(existsSync(path.join(root, mentioned!)), `${file} names ${mentioned}`).to.equal(true);
      }
    }
  });

  it('link to files and headings that exist', () => {
    for (const file of docs) {
      for (const [, target] of read(file).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [linked, anchor] = target!.split('#');
        const resolved = linked ? path.join(path.dirname(file), linked) : file;
        expect(existsSync(path.join(root, resolved)), `${file} links to ${target}`).to.equal(true);
        if (!anchor || !resolved.endsWith('.md')) continue;
        const anchors = [...read(resolved).matchAll(/^#+ (.+)$/gm)].map(([, heading]) => anchorOf(heading!));
        expect(anchors, `${file} links to ${target}`).to.include(anchor);
      }
    }
  });
});

describe('what the docs state is what the code does', () => {
  const simulator = read('docs/simulator.md');
  const scriptSection = simulator.slice(simulator.indexOf('## The scripted model'));

  /** A step of the table with its placeholders filled in, as a user would write it. */
  const filled = (template: string) =>
    template
      .replace('APP', 'Browser')
      .replace('HOST[/PATH]', 'shop.example.com/cart')
      .replace(/"LABEL"/g, '"Buy now"')
      .replace('X Y', '10 20')
      .replace('"QUESTION" "OPTION" …', '"Which size?" "S" "M"')
      .replace('"WHAT" [CATEGORY]', '"Pay" purchase')
      .replace('NAME {JSON}', 'lookup {"q": 1}')
      .replace('[PATH]', 'notes')
      .replace('PATH', 'notes/a.txt')
      .replace(/"(TEXT|REASON|QUERY|SUMMARY)"/g, '"x"')
      .replace('SECONDS', '1.5')
      .replace('COMBO', 'cmd+enter');

  it('docs/simulator.md: every step of the script table parses, as written there', () => {
    const start = scriptSection.indexOf('| step');
    const table = scriptSection.slice(start, scriptSection.indexOf('\n\n', start));
    const templates = table
      .split('\n')
      .slice(2)
      .flatMap((row) => [...row.split('|')[1]!.matchAll(/`([^`]+)`/g)].map(([, step]) => step!));
    expect(templates.length).to.be.greaterThan(15);
    for (const template of templates) {
      const step = filled(template);
      expect(() => parseScript(step), step).not.to.throw();
    }
  });

  it('docs/simulator.md: its example scripts parse', () => {
    const examples = [...scriptSection.matchAll(/```\n([\s\S]*?)```/g)].map(([, body]) => body!);
    expect(examples).to.have.length.greaterThan(0);
    for (const example of examples) expect(() => parseScript(example), example).not.to.throw();
  });

  it("README: DESKHAND_ADMIN_TOKEN's minimum length is the one start-up enforces", () => {
    const row = read('README.md').split('\n').find((line) => line.startsWith('| `DESKHAND_ADMIN_TOKEN`'))!;
    const minimum = Number(/at least (\d+) characters/.exec(row)?.[1]);
    expect(minimum).to.be.greaterThan(0);
    expect(loadConfig(testEnv({ DESKHAND_ADMIN_TOKEN: 'x'.repeat(minimum) })).adminToken).to.have.length(minimum);
    expect(() => loadConfig(testEnv({ DESKHAND_ADMIN_TOKEN: 'x'.repeat(minimum - 1) }))).to.throw(ConfigError);
  });
  it('README: says exactly when categories are detected (the Mac app version the guardrails use; not on Windows, older apps or without Accessibility)', () => {
    const readme = read('README.md').replace(/\s+/g, ' ');
    const version = /On a Mac whose app is version (\d+\.\d+\.\d+) or later and has the Accessibility permission, Deskhand detects/.exec(readme)?.[1];
    expect(version, 'the README names the version').to.be.a('string');
    expect(version).to.equal(CATEGORY_DETECTION_SINCE.join('.'));
    expect(readme).to.contain('On Windows, on older Mac apps and on a Mac without Accessibility no category is detected');
    // The simulated Mac the docs' examples run on reports element info from that version on.
    expect(capabilitiesFor('mac', version!, true).element_info).to.equal(true);
    expect(capabilitiesFor('mac', '1.0.19', true).element_info).to.equal(false);
    expect(capabilitiesFor('mac', version!, false).element_info).to.equal(false);
  });
});
