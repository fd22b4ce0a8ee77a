import { expect } from 'chai';
import { MachineDisk } from '../../shared/simulator/machine-disk';
import { OUTPUT_KEPT_BYTES, TIMEOUT_EXIT_CODE, lastBytes, runScript } from '../../shared/simulator/machine-shell';

const run = (disk: MachineDisk, script: string, timeoutMs = 5000) => runScript(disk.fs, script, { timeoutMs });

describe('the simulated machine\'s shell', () => {
  it('starts in $HOME (/home/user) with HOME set', async () => {
    const result = await run(MachineDisk.fresh(), 'pwd; echo "$HOME"');
    expect(result).to.deep.equal({ exit_code: 0, output: '/home/user\n/home/user\n', stdout: '/home/user\n/home/user\n', stderr: '', timed_out: false });
  });

  it('keeps stdout and stderr apart as well as together (stdout first)', async () => {
    const result = await run(MachineDisk.fresh(), 'echo to-out; echo to-err >&2; cat /nope; exit 3');
    expect(result).to.deep.equal({ exit_code: 3, output: 'to-out\nto-err\ncat: /nope: No such file or directory\n', stdout: 'to-out\n', stderr: 'to-err\ncat: /nope: No such file or directory\n', timed_out: false });
  });

  // The commands spec/evals.md promises, each used the way setup and check scripts use them.
  const commands: Array<{ name: string; script: string; output: string; exit_code?: number }> = [
    { name: 'cd and ls', script: 'cd Documents && ls', output: 'report.txt\n' },
    { name: 'cat', script: 'cat Documents/report.txt', output: 'Quarterly report\nRevenue grew 4% over the last quarter.' },
    { name: 'echo with > and >>', script: 'echo one > a.txt; echo two >> a.txt; cat a.txt', output: 'one\ntwo\n' },
    { name: 'test and [', script: 'test -f Documents/report.txt && [ ! -e nope ] && [ -d Documents ] && echo yes', output: 'yes\n' },
    { name: 'grep', script: 'grep -c Revenue Documents/report.txt; grep -q Missing Documents/report.txt', output: '1\n', exit_code: 1 },
    { name: 'mkdir, mv and rm', script: 'mkdir -p x/y && echo hi > x/y/f && mv x/y/f x/g && rm -r x/y && ls x', output: 'g\n' },
    { name: 'pipes', script: 'echo "b a c" | tr " " "\\n" | sort | grep -v c', output: 'a\nb\n' },
    { name: '&& and ||', script: 'false && echo no || echo fallback', output: 'fallback\n' },
    { name: 'if', script: 'if [ -f Documents/report.txt ]; then echo there; else echo gone; fi', output: 'there\n' },
    { name: 'exit N', script: 'echo before; exit 7; echo after', output: 'before\n', exit_code: 7 },
  ];
  for (const command of commands) {
    it(`runs ${command.name}`, async () => {
      const result = await run(MachineDisk.fresh(), command.script);
      expect(result.output).to.equal(command.output);
      expect(result.exit_code).to.equal(command.exit_code ?? 0);
    });
  }

  it('keeps what scripts write on the disk for the next script', async () => {
    const disk = MachineDisk.fresh();
    await run(disk, 'echo saved > Documents/state.txt');
    expect(await run(disk, 'cat ~/Documents/state.txt')).to.include({ output: 'saved\n', exit_code: 0 });
  });

  it('reports stderr and the exit status of a failing command', async () => {
    const result = await run(MachineDisk.fresh(), 'cat nothing-here');
    expect(result.exit_code).to.equal(1);
    expect(result.output).to.contain('nothing-here');
  });

  it('stops a script that runs past its deadline with exit 124, busy loops included', async () => {
    for (const script of ['while true; do :; done', 'sleep 30']) {
      const result = await run(MachineDisk.fresh(), script, 200);
      expect(result.exit_code, script).to.equal(TIMEOUT_EXIT_CODE);
      expect(result.timed_out, script).to.equal(true);
    }
  });

  it('keeps the last 16 KB of output', async () => {
    const result = await run(MachineDisk.fresh(), 'for i in $(seq 1 3000); do echo "line $i ........"; done');
    expect(Buffer.byteLength(result.output)).to.be.at.most(OUTPUT_KEPT_BYTES);
    expect(result.output).to.match(/line 3000 \.+\n$/);
    expect(result.output).not.to.contain('line 1 .');
  });

  it('cuts output at a character boundary', () => {
    expect(lastBytes('aé€', 3)).to.equal('€');
    expect(lastBytes('aé€', 4)).to.equal('€');
    expect(lastBytes('aé€', 5)).to.equal('é€');
  });
});
