"""Named-barrier ids (bar.sync / bar.arrive), one IntEnum per kernel family.

A CTA has 16 hardware named barriers; id 0 is __syncthreads. Each family's ids are listed in
one place so that two uses never collide by accident (a shared id makes unrelated thread groups
wait on each other, or deadlock when their thread counts differ).
"""

from __future__ import annotations

from enum import IntEnum, unique


@unique
class GemmBarrier(IntEnum):
    """gemm and gemm_rmsnorm (producer warpgroup + consumer warpgroups)."""

    SYNC_THREADS = 0
    EPILOGUE = 1                 # all consumer threads, between stmatrix and the TMA store
    MMA_TURN_WG0 = 2             # pingpong: consumer warpgroup 0 waits here for its turn
    MMA_TURN_WG1 = 3             # ... and warpgroup 1
    EPILOGUE_WG0 = 4             # pingpong: warpgroup 0's own epilogue barrier
    EPILOGUE_WG1 = 5             # ... and warpgroup 1's


@unique
class AttentionBarrier(IntEnum):
    """flash_attn (producer warpgroup + two or three math warpgroups)."""

    SYNC_THREADS = 0
    EPILOGUE = 1                 # all math threads, between stmatrix and the TMA store
    TURN_WG0 = 2                 # pingpong: math warpgroup w waits on TURN_WG0 + w for its turn
    TURN_WG1 = 3
    TURN_WG2 = 4
    Q_READ = 5                   # o_reuses_q: every math warpgroup is past its last Q K^T
    EPILOGUE_WG0 = 6             # wg_epilogue: math warpgroup w's own epilogue barrier is
    EPILOGUE_WG1 = 7             # EPILOGUE_WG0 + w
    EPILOGUE_WG2 = 8
