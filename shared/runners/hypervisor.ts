/**
 * What a runner's machines can do, whatever makes them: the interface between the runner's
 * protocol client (`ReferenceRunner`, shared/simulator/runner/reference-runner.ts, which speaks
 * docs/runners.md to the service) and a provider. Two providers implement it: the simulated
 * hypervisor (shared/simulator/runner/simulated-hypervisor.ts: simulated computers with a
 * disk) and the QEMU hypervisor (runner/qemu/qemu-hypervisor.ts: real virtual machines).
 *
 * It lives in shared/runners/ beside the protocol's event names (runner-events.ts) because both
 * the client and the providers depend on it and it depends on nothing: the client reads the
 * service's commands and checks their arguments (shared/simulator/runner/machine-commands.ts),
 * a provider is handed typed requests and answers with results or a `CommandError` whose code
 * the service reads.
 */

/** A disk to make a machine from or to save one as: an image, or a saved start state version of one. */
export interface DiskRef {
  image: string;
  state?: string;
  version?: number;
}

/** A saved start state version: where `machine.save` keeps a machine's disk. */
export interface StateDiskRef {
  image: string;
  state: string;
  version: number;
}

export type CommandErrorCode = 'no_such_machine' | 'no_such_disk' | 'no_such_image' | 'boot_failed' | 'timeout' | 'failed';

/** A command that could not be carried out, with the code the service reads. */
export class CommandError extends Error {
  constructor(
    readonly code: CommandErrorCode,
    message: string,
    /** What the command still has to say (a timed-out script's output so far). */
    readonly result?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'CommandError';
  }
}

/** `machine.make`: the disk, the pairing code of the machine session it connects as, and its system (`mac`, `windows`, `linux`). */
export interface MakeRequest {
  disk: DiskRef;
  code: string;
  os: string;
}

/** `machine.run`: a bash script and how long it may take. */
export interface ScriptRequest {
  script: string;
  timeoutMs: number;
}

/** A script's end: its exit status, stdout then stderr (the last 16 KB), each apart, and whether it ran past its time. */
export interface ScriptOutcome {
  exit_code: number;
  output: string;
  stdout: string;
  stderr: string;
  timed_out: boolean;
}

/** What a person at the machine does: the console's input, and the service's click on a labelled element. */
export type MachineInput =
  | { type: 'click'; x: number; y: number }
  | { type: 'type'; text: string }
  | { type: 'key'; keys: string }
  | { type: 'click_label'; label: string };

/** An input's end: `frame` counts the machine's screen changes; `ok: false` when the machine could not do it. */
export type InputOutcome = { ok: true; frame: number } | { ok: false; message: string; frame: number };

/** The machine's screen now, as PNG bytes, with its frame number. */
export interface MachineScreen {
  frame: number;
  width: number;
  height: number;
  png: Buffer;
}

export interface Hypervisor {
  /** What the runner reports as its `provider` (`simulated`, `qemu`). */
  readonly provider: string;
  /** The images it can make machines from, reported in the hello. */
  images(): readonly string[];
  /** The machines it runs now (booting ones too), by id. */
  ids(): string[];
  /**
   * Makes a machine from the disk and connects it to the service's `/desktop` namespace as the
   * machine session of `code`; resolves once the service accepted its hello.
   * Errors: `no_such_image`, `no_such_disk`, `boot_failed`, `failed` (a slot or id taken).
   */
  make(machineId: string, request: MakeRequest): Promise<void>;
  /** Runs a script in the machine as its user (`no_such_machine` when it does not run it). */
  run(machineId: string, request: ScriptRequest): Promise<ScriptOutcome>;
  /** Keeps the machine's disk as a start state version; resolves with what it takes up. */
  save(machineId: string, disk: StateDiskRef): Promise<{ bytes: number }>;
  /** Stops a machine and forgets it; a machine it does not run is already destroyed. */
  destroy(machineId: string): Promise<{ existed: boolean }>;
  /** Deletes every saved version of a state; nothing to delete is fine. */
  deleteState(state: string): Promise<void>;
  /** The machine's screen, or null when it does not run it. */
  screen(machineId: string): Promise<MachineScreen | null>;
  /** Input as the person at the machine (`no_such_machine` when it does not run it). */
  input(machineId: string, input: MachineInput): Promise<InputOutcome>;
  /** Destroys every machine (the runner stops). */
  destroyAll(): Promise<void>;
  /** Lets go of what the provider holds beyond its machines (after `destroyAll`). */
  close(): Promise<void>;
}
