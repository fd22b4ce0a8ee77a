import { DesktopClient } from '../../shared/simulator/desktop-client';
import { MACHINE_APP_VERSION, MACHINE_SCREEN } from '../../shared/simulator/runner/simulated-hypervisor';

/**
 * Reference desktop clients (the simulated computers people pair), in the bench's process, that
 * say when each of their tasks ended: the service shows `ended` to the computer once the task's
 * end is committed, so a bench can start the next task there without polling the API.
 */
export class WatchedDesktops {
  private readonly clients: DesktopClient[] = [];
  private readonly ended = new Set<string>();
  private readonly waiters = new Map<string, () => void>();

  /** Pairs one computer per code and resolves once the service welcomed every one. */
  async connect(baseUrl: string, codes: string[]): Promise<void> {
    for (const code of codes) {
      const client = new DesktopClient({
        baseUrl,
        code,
        os: 'mac',
        // As a reference runner's machine is, so that both sides' computers cost the same.
        appVersion: MACHINE_APP_VERSION,
        name: 'bench',
        ...MACHINE_SCREEN,
        accessibility: true,
        delayMs: 0,
        out: (line) => this.line(line as { event?: string; kind?: string; task_id?: string }),
      });
      this.clients.push(client);
    }
    await Promise.all(this.clients.map((client) => client.start()));
  }

  /** Resolves once the computer was shown that `taskId` ended. */
  taskEnded(taskId: string): Promise<void> {
    if (this.ended.has(taskId)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.set(taskId, resolve));
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((client) => client.close()));
  }

  private line(line: { event?: string; kind?: string; task_id?: string }): void {
    if (line.event === 'error' || line.event === 'refused') process.stderr.write(`desktop: ${JSON.stringify(line)}\n`);
    if (line.event !== 'show' || line.kind !== 'ended' || !line.task_id) return;
    this.ended.add(line.task_id);
    this.waiters.get(line.task_id)?.();
    this.waiters.delete(line.task_id);
  }
}
