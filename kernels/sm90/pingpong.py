"""Turn taking between math warpgroups over named barriers (the "ping-pong" schedule).

Warpgroup w of n waits on barrier `first + w` for its turn to issue its WGMMAs and, once it
has issued them, hands the turn on by arriving (without waiting) on barrier `first + (w + 1) % n`:
the turns go round a ring. A barrier counts the 128 threads that wait on it plus the 128 that
arrive, so `threads` is 256. Someone must arrive on warpgroup 0's barrier once before anyone
waits (`give_first_turn`), or the first wait never returns.

The barrier id of every bar.sync is a constant: with a run-time id the compiler keeps the id
(and the branch that picks it) in registers across the in-flight WGMMAs. A warpgroup index known
at trace time (a Python int) selects the id directly; a run-time (warp-uniform) index selects it
with one branch per warpgroup, for up to three warpgroups.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute


class PingPongTurns:
    def __init__(self, first_barrier: int, warpgroups: int, threads: int = 256, enabled: bool = True):
        if not 2 <= warpgroups <= 3:
            raise ValueError(f"turn taking is built for 2 or 3 warpgroups, got {warpgroups}")
        self.first_barrier = int(first_barrier)
        self.warpgroups = warpgroups
        self.threads = threads
        self.enabled = enabled       # False: every method is a no-op (one schedule, no turns)

    def _barrier_of(self, wg: int) -> int:
        return self.first_barrier + wg % self.warpgroups

    def give_first_turn(self):
        """One arrival on warpgroup 0's barrier, by whoever starts the ring."""
        if cutlass.const_expr(self.enabled):
            cute.arch.barrier_arrive(barrier_id=self.first_barrier, number_of_threads=self.threads)

    @cute.jit
    def wait(self, wg):
        """Block until it is warpgroup `wg`'s turn."""
        if cutlass.const_expr(self.enabled):
            if cutlass.const_expr(isinstance(wg, int)):
                cute.arch.barrier(barrier_id=self._barrier_of(wg), number_of_threads=self.threads)
            else:
                if wg == 0:
                    cute.arch.barrier(barrier_id=self.first_barrier, number_of_threads=self.threads)
                elif wg == 1:
                    cute.arch.barrier(barrier_id=self.first_barrier + 1, number_of_threads=self.threads)
                else:
                    cute.arch.barrier(barrier_id=self.first_barrier + 2, number_of_threads=self.threads)

    @cute.jit
    def hand_over(self, wg):
        """Warpgroup `wg` has issued its WGMMAs: the next warpgroup of the ring may issue its own."""
        if cutlass.const_expr(self.enabled):
            if cutlass.const_expr(isinstance(wg, int)):
                cute.arch.barrier_arrive(barrier_id=self._barrier_of(wg + 1), number_of_threads=self.threads)
            else:
                if wg == 0:
                    cute.arch.barrier_arrive(barrier_id=self.first_barrier + 1, number_of_threads=self.threads)
                elif wg == self.warpgroups - 1:
                    cute.arch.barrier_arrive(barrier_id=self.first_barrier, number_of_threads=self.threads)
                else:
                    cute.arch.barrier_arrive(barrier_id=self.first_barrier + 2, number_of_threads=self.threads)
