import { expect } from 'chai';
import { X11Connection } from '../../../desktop/src/x11-connection';
import { startDesktop, type RealDesktop } from '../../support/linux-desktop';

// The `x11` package keeps the atoms a client interns in its module's own table, shared by every
// connection of the process: a second X server, where the same names have other numbers, was
// read with the first one's (the suite found it when two desktop test files ran in one process:
// openbox "never" managed the second screen).
describe('Linux desktop: X connections to one server after another, in one process', function () {
  this.timeout(90_000);
  const desktops: RealDesktop[] = [];
  after(async () => {
    for (const desktop of desktops) await desktop.stop();
  });

  it('reads each server with its own atoms: the window manager of each is found', async () => {
    // Atoms interned on a first server, in an order that gives the names numbers a second
    // server (interning only what it needs) will not give them.
    const first = await startDesktop({ accessibility: false });
    desktops.push(first);
    const one = await X11Connection.open(first.display);
    for (const name of ['DESKHAND_TEST_A', 'DESKHAND_TEST_B', 'DESKHAND_TEST_C']) await one.atom(name);
    const firstManager = await one.cardinals(one.root, '_NET_SUPPORTING_WM_CHECK');
    expect(firstManager).to.have.length(1);
    await one.close();
    await first.stop();
    desktops.pop();

    const second = await startDesktop({ accessibility: false });
    desktops.push(second);
    const two = await X11Connection.open(second.display);
    try {
      const interned = await two.request<number>((callback) => two.client.InternAtom(true, '_NET_SUPPORTING_WM_CHECK', callback));
      expect(await two.atom('_NET_SUPPORTING_WM_CHECK'), 'the number this server gives the name').to.equal(interned);
      expect(await two.cardinals(two.root, '_NET_SUPPORTING_WM_CHECK')).to.have.length(1);
    } finally {
      await two.close();
    }
  });
});
