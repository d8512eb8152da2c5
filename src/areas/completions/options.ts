import { bool, int } from '../../config/env.js';

/** Process-level settings of the chat pipeline (the reference's env.py CHAT_RESPONSE_* constants). */
export interface PipelineOptions {
  /** CHAT_RESPONSE_STREAM_DELTA_CHUNK_SIZE: changes of an answer per `chat:completion` event (at least; a request may ask for more). */
  streamDeltaChunkSize: number;
  /**
   * CHAT_RESPONSE_MAX_TOOL_CALL_ITERATIONS (or the older ..._RETRIES): rounds of
   * tool calls per answer. Always bounded here: 0 or less (the reference's
   * "unlimited") means the default.
   */
  maxToolCallRounds: number;
  /** RAG_SYSTEM_CONTEXT: retrieved context goes into the system message instead of before the user's last message. */
  ragSystemContext: boolean;
  /** CODE_INTERPRETER_BLOCKED_MODULES (comma-separated): modules the code interpreter's code may not import directly. */
  codeInterpreterBlockedModules: string[];
}

const DEFAULT_TOOL_ROUNDS = 30;

export function readPipelineOptions(raw: Record<string, string | undefined>): PipelineOptions {
  const rounds = int(raw.CHAT_RESPONSE_MAX_TOOL_CALL_ITERATIONS ?? raw.CHAT_RESPONSE_MAX_TOOL_CALL_RETRIES, DEFAULT_TOOL_ROUNDS);
  return {
    streamDeltaChunkSize: Math.max(1, int(raw.CHAT_RESPONSE_STREAM_DELTA_CHUNK_SIZE, 1)),
    maxToolCallRounds: rounds > 0 ? rounds : DEFAULT_TOOL_ROUNDS,
    ragSystemContext: bool(raw.RAG_SYSTEM_CONTEXT, false),
    codeInterpreterBlockedModules: (raw.CODE_INTERPRETER_BLOCKED_MODULES ?? '')
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean),
  };
}
