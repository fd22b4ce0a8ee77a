/**
 * The contract between the task-step worker and a model backend.
 *
 * A task is a chain of model turns and nothing survives between turns except what PostgreSQL
 * keeps, so a backend is a function of its input: `turn(input) → output`. Whatever a backend
 * needs to remember (a transcript, a script position, a vendor's response id) goes into the
 * opaque JSON `state` of its output, and the worker hands it back, unread, on the next turn.
 *
 * docs/models.md describes the backends behind this interface.
 */
import type { DesktopAction, GuardrailCategory, Observation } from '../desktop/protocol';

export const MODEL_BACKEND_IDS = ['scripted', 'anthropic', 'openai', 'gemini'] as const;
export type ModelBackendId = (typeof MODEL_BACKEND_IDS)[number];

export const EFFORTS = ['low', 'medium', 'high'] as const;
export type Effort = (typeof EFFORTS)[number];

export const FILE_OPS = ['list', 'read', 'write', 'delete', 'search'] as const;
export type FileOp = (typeof FILE_OPS)[number];

/** The agent's tools as the model may use them (AgentTools of the spec, minus what only the service needs). */
export interface ModelTools {
  /** The org's HTTP tools; the service keeps their URLs and secrets. */
  http: Array<{ name: string; description: string }>;
  /** The agent's own file store. */
  files: { enabled: boolean; read_only: boolean };
}

/** The computer the agent works on. */
export interface ModelDisplay {
  width: number;
  height: number;
  /**
   * The system as the desktop app reports it (`DeviceInfo.os`): `mac`, `windows` or `linux`.
   * Backends need it to name apps and keys (Cmd on a Mac, Ctrl on Windows and Linux); they read it
   * with `desktopOs` (shared/desktop/os.ts), which treats an unknown system like a Mac.
   */
  os: string;
}

/** How one desktop action of the previous turn went. */
export interface ActionOutcome {
  ok: boolean;
  /** Why it could not be carried out (no such element, app not open…). */
  error?: string;
}

/**
 * What happened to the previous turn's move, as the model gets to see it. Null on the first turn
 * and when there is nothing to report (after `sleep`, `slept` may be sent instead).
 */
export type TurnOutcome =
  /** The actions ran (results in order, one per action; fewer when the computer stopped early). */
  | { kind: 'actions'; results: ActionOutcome[]; note?: string }
  /**
   * The guardrails refused the move (or its remaining actions). `results` holds the actions that
   * ran before the refused one, if any.
   */
  | { kind: 'refused'; reason: string; results?: ActionOutcome[] }
  /** The answer to the model's question (`ask`). */
  | { kind: 'answer'; answer: string }
  /** The decision on the model's own approval request (`request_approval`). */
  | { kind: 'approval'; decision: 'approve' | 'deny'; reason?: string | null }
  /** An HTTP tool call: the reply body as text when `ok`, or why the call failed. */
  | { kind: 'tool'; ok: boolean; text: string }
  /** A file operation: its result (listing, file text, search hits, confirmation) or its error. */
  | { kind: 'file'; ok: boolean; text: string }
  /** The model's `sleep` ended. */
  | { kind: 'slept'; seconds: number };

export interface ModelTurnInput {
  /** One of the catalog's model ids (shared/models/catalog.ts). */
  model: string;
  effort: Effort;
  /** The service's own rules, then the agent's instructions. */
  system: string;
  /** The task prompt (for the scripted model: the script). */
  prompt: string;
  /** The `state` the previous turn returned; null on the first turn. */
  state: unknown | null;
  /** What the computer last reported; null before anything was reported. */
  observation: Observation | null;
  /** PNG of the screen as it is now (after the previous turn's actions); null when none. */
  screenshot: Buffer | null;
  lastOutcome: TurnOutcome | null;
  /**
   * A person approved the safety check the previous turn raised (`safety`), so its move ran.
   * Only then does a backend acknowledge the vendor's safety checks; never when the check was
   * not put to a person, nor for the actions the guardrails refused. Absent: false.
   */
  safetyApproved?: boolean;
  tools: ModelTools;
  display: ModelDisplay;
}

/** The one thing the model wants done next. */
export type ModelMove =
  /** Desktop actions, run in order; `step` is a short human description of them. */
  | { kind: 'actions'; actions: DesktopAction[]; step: string }
  /** A question to the team (and the person); empty `options` means a free answer. */
  | { kind: 'ask'; question: string; options: string[] }
  /** The model's own approval request, optionally naming a guardrail category. */
  | { kind: 'request_approval'; what: string; category: GuardrailCategory | null }
  /** A call to one of the agent's HTTP tools. */
  | { kind: 'tool'; name: string; arguments: Record<string, unknown> }
  /** An operation on the agent's own file store. */
  | { kind: 'file'; op: FileOp; path?: string; text?: string; query?: string }
  /** The model thinks for a while (counts as running time); the worker schedules the next turn. */
  | { kind: 'sleep'; seconds: number }
  /** Finished; `summary` becomes the task's `result`. */
  | { kind: 'done'; summary: string }
  /** Gave up; the task fails with `reason`. */
  | { kind: 'fail'; reason: string };

export interface ModelUsage {
  input_tokens: number;
  output_tokens: number;
}

export interface ModelTurnOutput {
  /** Small JSON to hand back as `input.state` on the next turn. */
  state: unknown;
  /** Narration of the model's thinking for this turn; null when it said nothing. */
  thought: string | null;
  move: ModelMove;
  /**
   * The model raised a safety check on this step (the reason); null when not. The guardrails'
   * `safety_checks` decides what happens before the move runs.
   */
  safety: string | null;
  usage?: ModelUsage;
}

export interface ModelBackend {
  readonly id: ModelBackendId;
  /** Whether a turn reads the screen: such a backend is given the latest recorded frame (a read of a stored PNG per turn). */
  readonly readsScreens: boolean;
  /**
   * Runs one model turn. Throws `ModelError` when the model cannot be reached or answers with an
   * error; `signal` aborts the call (a timeout or a stopped task).
   */
  turn(input: ModelTurnInput, signal?: AbortSignal): Promise<ModelTurnOutput>;
  /**
   * The scope check of `guardrails.scope`, where the backend has a judge: decides whether a task
   * prompt is about the agent's scope. Throws `ModelError` like `turn`. The scripted model's
   * rules live in `judgeScopeScripted`.
   */
  judgeScope?(input: ScopeJudgeInput, signal?: AbortSignal): Promise<ScopeVerdict>;
}

/** What a scope judge is asked: the agent's scope, the task prompt, the task's model id. */
export interface ScopeJudgeInput {
  scope: string;
  prompt: string;
  model: string;
}

/** A scope judge's answer; `reason` becomes the task's `error` when it is not `in_scope`. */
export interface ScopeVerdict {
  verdict: 'in_scope' | 'off_scope' | 'undecidable';
  reason: string;
}

export type ModelErrorCode =
  /** 429 from the vendor. */
  | 'rate_limited'
  /** 429 because the account has no quota or credit left (OpenAI `insufficient_quota`): no retry helps. */
  | 'quota_exhausted'
  /** 5xx from the vendor (including Anthropic's 529 overloaded). */
  | 'server_error'
  /** No HTTP answer at all (connection refused, reset, DNS). */
  | 'network'
  /** The call took longer than allowed. */
  | 'timeout'
  /** The caller aborted the call. */
  | 'aborted'
  /** 400/422: the request was refused as malformed. */
  | 'bad_request'
  /** 401/403: the key is missing, wrong or not allowed this model. */
  | 'unauthorized'
  /** 404: unknown model or endpoint. */
  | 'not_found'
  /** Any other 4xx. */
  | 'http_error'
  /** The vendor answered 2xx with something this backend cannot read. */
  | 'invalid_response'
  /** The backend was given input it cannot work with (e.g. a state of another backend). */
  | 'invalid_input';

/** A model call that failed. `retryable` says whether trying the same turn again may succeed. */
export class ModelError extends Error {
  override readonly name = 'ModelError';
  readonly code: ModelErrorCode;
  readonly retryable: boolean;
  /** HTTP status of the vendor's answer; null when there was none. */
  readonly status: number | null;
  /** How long the vendor asked us to wait (from `retry-after`), when it said. */
  readonly retryAfterMs: number | null;
  readonly backend: ModelBackendId;

  constructor(
    message: string,
    options: {
      code: ModelErrorCode;
      retryable: boolean;
      backend: ModelBackendId;
      status?: number | null;
      retryAfterMs?: number | null;
      cause?: unknown;
    },
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
    this.retryable = options.retryable;
    this.backend = options.backend;
    this.status = options.status ?? null;
    this.retryAfterMs = options.retryAfterMs ?? null;
  }
}
