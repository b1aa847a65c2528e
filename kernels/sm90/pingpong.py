"""Turn taking between math warpgroups over named barriers (the "ping-pong" schedule).

Warpgroup w of n waits on barrier `first + w` for its turn to issue its WGMMAs and, once it
has issued them, hands the turn on by arriving (without waiting) on barrier `first + (w + 1) % n`:
the turns go round a ring. A barrier counts the 128 threads that wait on it plus the 128 that
arrive, so `threads` is 256. Someone must arrive on warpgroup 0's barrier once before anyone
waits (`give_first_turn`), or the first wait never returns.

A warpgroup index known at trace time (a Python int) names a constant barrier. A run-time
(warp-uniform) index names its barrier at run time: one bar.sync and one bar.arrive with the id
in a register. Picking a constant id by branching instead costs up to three predicated BAR
instructions per call (each issued, even when predicated off) plus the branch: flash_attn at D=64
issued 2.3x fa4's BARs that way, and the run-time ids made it 0.5-2.0% faster on every suite shape
(H100, two paired runs; kernels/flash_attn/NOTES.md). The ids live in uniform registers and move
to a regular one just before each BAR, so they hold no register across the in-flight WGMMAs.
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
                cute.arch.barrier(barrier_id=self.first_barrier + wg, number_of_threads=self.threads)

    @cute.jit
    def hand_over(self, wg):
        """Warpgroup `wg` has issued its WGMMAs: the next warpgroup of the ring may issue its own."""
        if cutlass.const_expr(self.enabled):
            if cutlass.const_expr(isinstance(wg, int)):
                cute.arch.barrier_arrive(barrier_id=self._barrier_of(wg + 1), number_of_threads=self.threads)
            else:
                following = cutlass.select_(wg == self.warpgroups - 1, self.first_barrier,
                                            self.first_barrier + wg + 1)
                cute.arch.barrier_arrive(barrier_id=following, number_of_threads=self.threads)
