import type { Socket } from 'node:net';

/** A request that takes its connection's turn at the upstream (the forwarder's handler). */
export interface TurnTaker {
  /** The turn is this request's: it asks for an upstream slot now. */
  takeTurn(): void;
  /** Its connection closed while it waited for its turn: give back what it holds, ask for nothing. */
  connectionGone(): void;
}

const TURN = Symbol('outrigger.upstreamTurn');
/** Held by a request, nobody waiting: a shared marker, so the usual request allocates nothing. */
const HELD: readonly TurnTaker[] = Object.freeze([]);

interface TurnSocket extends Socket {
  [TURN]?: readonly TurnTaker[] | TurnTaker[] | null;
}

/**
 * Requests pipelined on one connection take the upstream one at a time (issue 34 item 1). Node
 * hands a connection's pipelined requests to the handler as fast as it parses them and queues
 * their answers behind the first, so a client that sends a hundred requests and reads nothing
 * used to take a hundred upstream slots (up to its address's share) whose answers could never be
 * sent. Now the next request of a connection asks for a slot only once the one before it is done
 * with the upstream; an answer is sent in order anyway, so the connection loses nothing.
 * The line lives on the socket object: no Map to clean up, gone with the connection.
 */
export const connectionTurns = {
  /** Calls `taker.takeTurn()` now when no other request of `socket` holds the turn, else after them. */
  enter(socket: Socket, taker: TurnTaker): void {
    const s = socket as TurnSocket;
    const line = s[TURN];
    if (line === undefined || line === null) {
      s[TURN] = HELD;
      taker.takeTurn();
    } else if (line === HELD) s[TURN] = [taker];
    else (line as TurnTaker[]).push(taker);
  },

  /** The request holding the turn of `socket` is done with the upstream: the next one goes. */
  leave(socket: Socket): void {
    const s = socket as TurnSocket;
    const line = s[TURN];
    if (line === undefined || line === null || line === HELD) {
      s[TURN] = null;
      return;
    }
    const waiting = line as TurnTaker[];
    if (socket.destroyed) {
      // Nobody will read these answers: the waiting requests give back what they hold.
      s[TURN] = null;
      for (const taker of waiting.splice(0)) taker.connectionGone();
      return;
    }
    const next = waiting.shift()!;
    if (waiting.length === 0) s[TURN] = HELD;
    next.takeTurn();
  },
};
