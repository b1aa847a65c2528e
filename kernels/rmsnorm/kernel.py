"""The RMSNorm kernel class (see the package docstring for the design). Imports the DSL:
kernels/rmsnorm/__init__.py imports this module only when it compiles."""

import cutlass
import cutlass.cute as cute
from cutlass import Float32


class RMSNormRows:
    def __init__(self, n: int, threads: int, vec: int):
        self.n = n
        self.threads = threads
        self.vec = vec
        self.iters = n // (threads * vec)
        self.warps = threads // 32

    @cute.jit
    def __call__(self, mX: cute.Tensor, mW: cute.Tensor, mY: cute.Tensor, eps: Float32, stream):
        rows = cute.size(mX, mode=[0])
        self.kernel(mX, mW, mY, eps).launch(
            grid=[rows, 1, 1], block=[self.threads, 1, 1],
            smem=self.warps * 4 + 16, stream=stream)

    @cute.kernel
    def kernel(self, mX: cute.Tensor, mW: cute.Tensor, mY: cute.Tensor, eps: Float32):
        tidx, _, _ = cute.arch.thread_idx()
        row, _, _ = cute.arch.block_idx()
        # Chunks of `vec` contiguous elements: ((vec), (N / vec)); chunk i*threads + tidx
        # keeps a warp's accesses contiguous (coalesced) in every iteration.
        gX = cute.zipped_divide(mX[row, None], (self.vec,))
        gY = cute.zipped_divide(mY[row, None], (self.vec,))
        gW = cute.zipped_divide(mW, (self.vec,))

        vals = cute.make_rmem_tensor(((self.vec,), self.iters), Float32)  # chunk shape matches ((vec),)
        sumsq = Float32(0.0)
        for i in cutlass.range_constexpr(self.iters):
            x = gX[(None, i * self.threads + tidx)].load().to(Float32)
            vals[None, i].store(x)
            sumsq = sumsq + (x * x).reduce(cute.ReductionOp.ADD, Float32(0.0), reduction_profile=0)

        sumsq = cute.arch.warp_reduction_sum(sumsq)
        smem = cutlass.memory.SmemAllocator()
        partial = smem.allocate_tensor(Float32, cute.make_layout(self.warps), byte_alignment=16)
        warp = tidx // 32
        lane = tidx % 32
        if lane == 0:
            partial[warp] = sumsq
        cute.arch.barrier()
        total = Float32(0.0)
        for w in cutlass.range_constexpr(self.warps):
            total = total + partial[w]
        rstd = cute.math.rsqrt(total / Float32(self.n) + eps)

        for i in cutlass.range_constexpr(self.iters):
            w = gW[(None, i * self.threads + tidx)].load().to(Float32)
            y = vals[None, i].load() * rstd * w
            gY[(None, i * self.threads + tidx)].store(y.to(mY.element_type))
