import { createHash } from 'node:crypto';
import type { ChainableCommander, Redis } from 'ioredis';

/** What a script needs of a connection: ioredis's Redis and Cluster both fit. */
export interface ScriptRunner {
  evalsha(sha: string, ...keysAndArgs: Array<string | Buffer | number>): Promise<unknown>;
  eval(source: string, ...keysAndArgs: Array<string | Buffer | number>): Promise<unknown>;
}

/** The same, for a script whose answer holds bytes (bulk strings come back as Buffers): ioredis's `callBuffer`. */
export interface BufferScriptRunner {
  callBuffer(command: string, ...args: Array<string | Buffer | number>): Promise<unknown>;
}

/**
 * The one way Outrigger runs a Redis script (BullMQ's habit: every script in one folder, one
 * loader). EVALSHA in the steady state, so the text crosses the network once per server; on
 * NOSCRIPT (a restarted or new server, a failover to a replica that never saw it) one EVAL runs
 * and loads it. Scripts live in src/store/scripts/, one file each, named for what they do.
 */
export class RedisScript {
  readonly sha: string;

  constructor(
    readonly name: string,
    readonly source: string,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  run(redis: ScriptRunner, keys: readonly string[], args: ReadonlyArray<string | Buffer | number>): Promise<unknown> {
    return this.runWith(redis, [keys.length, ...keys, ...args]);
  }

  /** For a long argument list built in place: `numberOfKeys, ...keys, ...args`, passed without another copy. */
  async runWith(redis: ScriptRunner, keysAndArgs: Array<string | Buffer | number>): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, ...keysAndArgs);
    } catch (error) {
      if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
      return redis.eval(this.source, ...keysAndArgs);
    }
  }

  /**
   * The script and then one more command (`then`: a WAIT, say) pipelined behind it: one round
   * trip, and on a cluster that command reaches the master that ran the script (the pipeline
   * follows the script's key). EVAL with the source, never EVALSHA: a NOSCRIPT would come back
   * only after a WAIT behind it had waited out its timeout, and the script would run that much
   * later. The script's failure throws; the other command's outcome is returned beside the
   * script's reply (its reply, or its error: the script may have run all the same).
   */
  async evalThen(redis: Redis, keysAndArgs: Array<string | Buffer | number>, then: (pipeline: ChainableCommander) => ChainableCommander): Promise<{ reply: unknown; then: unknown }> {
    const args = keysAndArgs as [number, ...Array<string | Buffer | number>];
    const replies = await then(redis.pipeline().eval(this.source, ...args)).exec();
    const [scriptError, reply] = replies?.[0] ?? [new Error('the script was not answered'), null];
    if (scriptError) throw scriptError;
    const [thenError, thenReply] = replies?.[1] ?? [new Error('the command after the script was not answered'), null];
    return { reply, then: thenError ?? thenReply };
  }

  /** `run`, with the answer's bulk strings as Buffers (a recorded body may be any bytes). */
  async runForBuffers(redis: BufferScriptRunner, keys: readonly string[], args: ReadonlyArray<string | Buffer | number>): Promise<unknown> {
    try {
      return await redis.callBuffer('evalsha', this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
      return redis.callBuffer('eval', this.source, keys.length, ...keys, ...args);
    }
  }
}
