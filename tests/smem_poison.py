"""A CuTe DSL kernel that leaves a NaN pattern in the shared memory of every SM.

Shared memory is not cleared between kernels: a kernel that reads a shared-memory word it never
wrote sees what the previous kernel on that SM left there. Run alone, that is often its own
earlier launch's data, which can hide the bug; launched right after this kernel, such a read
comes out as NaN (0x7FC0 is a NaN in bf16 and fp16, 0x7FC07FC0 one in fp32).
"""

import functools
import os

from kernelscope.kernels.sm90.device import SMEM_PER_BLOCK_BYTES, SMEM_RESERVED_BYTES

THREADS = 1024
NAN_WORD = 0x7FC07FC0
# 32-bit words per CTA: (almost) the largest allocation a CTA may make, a multiple of THREADS.
WORDS = ((SMEM_PER_BLOCK_BYTES - SMEM_RESERVED_BYTES) // 4) // THREADS * THREADS


@functools.lru_cache(maxsize=2)
def compiled(use_gpu: bool):
    """The compiled poisoner: (out int32[ctas * THREADS], ctas, stream); each thread writes
    back one word it reads from shared memory, so the stores cannot be dropped."""
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    import cutlass
    import cutlass.cute as cute

    from kernelscope.kernels import cute_build

    @cute.kernel
    def poison_kernel(gOut: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        buf = smem.allocate_tensor(cutlass.Int32, cute.make_layout(WORDS), byte_alignment=1024)
        for i in cutlass.range_constexpr(WORDS // THREADS):
            buf[i * THREADS + tidx] = cutlass.Int32(NAN_WORD)
        cute.arch.sync_threads()
        gOut[bidx * THREADS + tidx] = buf[(tidx * 37 + bidx * 101) % WORDS]

    @cute.jit
    def poison(mOut: cute.Tensor, ctas: cutlass.Int32, stream):
        poison_kernel(mOut).launch(grid=[ctas, 1, 1], block=[THREADS, 1, 1], stream=stream)

    if use_gpu:
        import torch
        out = cute_build.to_cute(torch.empty(THREADS, dtype=torch.int32, device="cuda"), leading_dim=0)
        stream = cute_build.current_stream()
    else:
        out = cute.runtime.make_fake_compact_tensor(cutlass.Int32, (cute.sym_int32(),), assumed_align=16)
        stream = cute_build.fake_stream()
    return cute.compile(poison, out, 1, stream, options=cute_build.artifact_options("kernelscope-poison-"))


def poison_shared_memory():
    """Launch 2 CTAs per SM, each filling ~227 KiB of shared memory with NaN; returns the words
    the threads read back (all NAN_WORD once the launch has finished)."""
    import torch

    from kernelscope.kernels import cute_build
    from kernelscope.kernels.sm90.device import sm_count

    ctas = 2 * sm_count()
    out = torch.zeros(ctas * THREADS, dtype=torch.int32, device="cuda")
    compiled(True)(cute_build.to_cute(out, leading_dim=0), ctas, cute_build.current_stream())
    return out
