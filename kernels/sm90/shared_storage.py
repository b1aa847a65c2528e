"""A CTA's shared memory as a cute.struct: the mbarrier words first, then the buffers, each
aligned to 1024 bytes (the 128-byte swizzle pattern of TMA boxes and WGMMA operands repeats every
1024 bytes). Built from a list, so that a kernel whose buffers depend on its config (an epilogue
buffer per warpgroup, O staged in Q's buffer) declares one struct, not one per case."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

BUFFER_ALIGN = 1024


def shared_storage(barrier_words: int, buffers) -> type:
    """`barrier_words` Int64 words, then each (field name, element dtype, staged layout) of
    `buffers`, in order."""
    fields = {"barriers": cute.struct.MemRange[cutlass.Int64, barrier_words]}
    for name, dtype, layout in buffers:
        fields[name] = cute.struct.Align[cute.struct.MemRange[dtype, cute.cosize(layout)], BUFFER_ALIGN]
    return cute.struct(type("SharedStorage", (), {"__annotations__": fields}))
