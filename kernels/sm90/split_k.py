"""Split-K for the persistent GEMMs: several CTAs share one output tile, each over a slice of K,
and the last slice adds the others' partial sums before the epilogue.

Which tiles are cut, and into how many slices, is decided per launch on the host
(kernels/split_k_plan.py: every tile, or only the last partial wave's).

The scheduler (kernels/sm90/tile_scheduler.py) numbers the work: the cluster tiles before
`split_from` one item each, then `slices` consecutive items per split tile, so the slices of a
tile run at the same time on neighbouring clusters.

Roles are fixed: the last slice of a tile (its last work item) is the reducer. Every other slice
writes its fp32 accumulators to a global workspace slot and raises a counter; the reducer waits
until the counter says all of them are there, adds them to its own accumulators and runs the
normal epilogue. It waits only on work items with smaller indices, which the persistent grid
(every CTA resident) has already handed to clusters, so the wait always ends.

The exchange is per consumer warp: a warp's accumulators hold the same tile elements in every
slice (same kernel, same thread -> element map), so warp w of the reducer needs only warp w of
each writer. One counter per (split CTA tile, consumer warp) and no CTA-wide barrier. The reducer
sets its counter back to 0, so the workspace needs zeroing once, not per launch.

Workspace layout: slot (split CTA tile q, slice s < slices - 1) is q * (slices - 1) + s and holds
tile_m x tile_n floats; accumulator v of consumer thread t is at v * consumer_threads + t, so
every warp-wide store or load is one 128-byte line.

SplitStateExchange is the same protocol for a state that is merged rather than added: attention
split along its keys exchanges each thread's O accumulators, row maxima and row sums, and the
reducer merges them by the caller's rule (OnlineSoftmax.merge). Its caller numbers the slots (one
per writer) and names the reducer, whose writers are the slots just before its own: a tile's key
ranges may be of unequal length and shared with the neighbouring tiles (kernels/flash_attn).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute


class SplitKExchange:
    """Device side of one kernel's split-K exchange (static: the consumer threads)."""

    def __init__(self, consumer_threads: int):
        self.consumer_threads = consumer_threads
        self.consumer_warps = consumer_threads // 32

    @cute.jit
    def exchange(self, acc: cute.Tensor, partials: cute.Tensor, counters: cute.Tensor,
                 split_tile, split, slices, consumer_tidx, lane):
        """Called by every consumer thread of a split tile after its slice's mainloop
        (split_tile: the CTA tile's index among the split ones). A writer slice stores `acc` and
        signals; the reducer waits for the others and adds their sums into `acc`."""
        n = cute.size(acc)
        threads = self.consumer_threads
        slot = n * threads
        warp = consumer_tidx // 32
        counter = counters.iterator + (split_tile * self.consumer_warps + warp)
        first_slot = split_tile * (slices - 1)
        if split < slices - 1:
            out = partials.iterator + ((first_slot + split) * slot + consumer_tidx)
            for v in cutlass.range(n, unroll_full=True):
                cute.arch.store(out + v * threads, acc[v], cop="cg")
            _signal(counter, lane)
        else:
            _await(counter, slices - 1)
            for s in range(slices - 1):
                src = partials.iterator + ((first_slot + s) * slot + consumer_tidx)
                for v in cutlass.range(n, unroll_full=True):
                    acc[v] = acc[v] + cute.arch.load(src + v * threads, cutlass.Float32, cop="cg")
            _reset(counter, lane)


class StreamKExchange:
    """Device side of stream-K (kernels/split_k_plan.py; the layouts of the runs are the
    scheduler's, kernels/sm90/tile_scheduler.py): a writer piece stores its partial sums in its
    slot and raises the counter of its tile's reducer, the run holding the tile's first k-tile,
    which adds the tile's slots. Writers never wait, so every wait ends. Slot s of CTA `rank`:
    s * cluster_ctas + rank; counter of run c's CTA `rank`: c * cluster_ctas + rank (a run reduces
    at most once). Same per-warp protocol and slot layout as SplitKExchange, or, with `vector` > 1,
    a thread's accumulators moved `vector` at a time: values q x vector .. + vector - 1 of thread t
    at (q x consumer_threads + t) x vector, one 16-byte access a thread for vector = 4 (a
    quarter of the instructions, each warp-wide access still whole 128-byte lines)."""

    def __init__(self, consumer_threads: int, cluster_ctas: int, vector: int = 1):
        self.consumer_threads = consumer_threads
        self.consumer_warps = consumer_threads // 32
        self.cluster_ctas = cluster_ctas
        self.vector = vector

    def _counter(self, counters, run, cta_rank, consumer_tidx):
        return counters.iterator + ((run * self.cluster_ctas + cta_rank) * self.consumer_warps
                                    + consumer_tidx // 32)

    def _slot(self, partials, slot, cta_rank, n, consumer_tidx):
        return partials.iterator + ((slot * self.cluster_ctas + cta_rank) * (n * self.consumer_threads)
                                    + consumer_tidx)

    @cute.jit
    def write(self, acc: cute.Tensor, partials: cute.Tensor, counters: cute.Tensor, slot, reducer,
              cta_rank, consumer_tidx, lane):
        """Store this piece in `slot` and signal run `reducer`."""
        n = cute.size(acc)
        threads = self.consumer_threads
        if cutlass.const_expr(self.vector > 1):
            vec = self.vector
            assert n % vec == 0, f"{n} accumulators a thread do not split into {vec}-wide accesses"
            out = self._slot(partials, slot, cta_rank, n, consumer_tidx * vec)
            chunk = cute.make_rmem_tensor(cute.make_layout(vec), cutlass.Float32)
            for q in cutlass.range_constexpr(n // vec):
                for i in cutlass.range_constexpr(vec):
                    chunk[i] = acc[q * vec + i]
                cute.autovec_copy(chunk, _vector_view(out + q * threads * vec, vec))
        else:
            out = self._slot(partials, slot, cta_rank, n, consumer_tidx)
            for v in cutlass.range(n, unroll_full=True):
                cute.arch.store(out + v * threads, acc[v], cop="cg")
        _signal(self._counter(counters, reducer, cta_rank, consumer_tidx), lane)

    @cute.jit
    def reduce(self, acc: cute.Tensor, partials: cute.Tensor, counters: cute.Tensor, run,
               first_slot, writers, cta_rank, consumer_tidx, lane):
        """Wait for `writers` signals to run `run`, then add slots first_slot .. + writers - 1."""
        n = cute.size(acc)
        threads = self.consumer_threads
        counter = self._counter(counters, run, cta_rank, consumer_tidx)
        _await(counter, writers)
        if cutlass.const_expr(self.vector > 1):
            vec = self.vector
            chunk = cute.make_rmem_tensor(cute.make_layout(vec), cutlass.Float32)
            for w in range(writers):
                src = self._slot(partials, first_slot + w, cta_rank, n, consumer_tidx * vec)
                for q in cutlass.range_constexpr(n // vec):
                    cute.autovec_copy(_vector_view(src + q * threads * vec, vec), chunk)
                    for i in cutlass.range_constexpr(vec):
                        acc[q * vec + i] = acc[q * vec + i] + chunk[i]
        else:
            for w in range(writers):
                src = self._slot(partials, first_slot + w, cta_rank, n, consumer_tidx)
                for v in cutlass.range(n, unroll_full=True):
                    acc[v] = acc[v] + cute.arch.load(src + v * threads, cutlass.Float32, cop="cg")
        _reset(counter, lane)


class SplitStateExchange:
    """Device side of a split whose partial results are merged by a rule of the caller's: each
    thread's state is a list of fp32 register tensors (the same shapes in every part)."""

    def __init__(self, threads: int, state_values: int):
        self.threads = threads
        self.warps = threads // 32
        self.state_values = state_values     # fp32 values per thread in one part's state

    def slot_floats(self) -> int:
        return self.state_values * self.threads

    @cute.jit
    def exchange(self, state: list, partials: cute.Tensor, counters: cute.Tensor, split_tile, slot,
                 reducer, first_writer, tidx, lane, merge):
        """Called by every thread of a piece of a split tile after its share of the work. A
        writer stores `state` in its slot and signals the tile's counter; the reducer waits for
        the writers of slots first_writer .. slot - 1 and, slot by slot, calls merge(other_state)
        with register tensors shaped as `state`. Returns whether this thread holds the merged
        result (the reducer)."""
        threads = self.threads
        warp = tidx // 32
        counter = counters.iterator + (split_tile * self.warps + warp)
        if not reducer:
            out = partials.iterator + (slot * self.slot_floats() + tidx)
            v = 0
            for tensor in state:
                for i in cutlass.range_constexpr(cute.size(tensor)):
                    cute.arch.store(out + v * threads, tensor[i], cop="cg")
                    v += 1
            _signal(counter, lane)
        else:
            writers = slot - first_writer
            _await(counter, writers)
            other = [cute.make_rmem_tensor(cute.size(t), cutlass.Float32) for t in state]
            for q in range(writers):
                src = partials.iterator + ((first_writer + q) * self.slot_floats() + tidx)
                v = 0
                for tensor in other:
                    for i in cutlass.range_constexpr(cute.size(tensor)):
                        tensor[i] = cute.arch.load(src + v * threads, cutlass.Float32, cop="cg")
                        v += 1
                merge(other)
            _reset(counter, lane)
        return reducer


def _vector_view(ptr, vec: int):
    """`vec` fp32 values of global memory at `ptr`, which the slot layout puts on a vec x 4-byte
    boundary (the workspace is allocated aligned): said to the compiler, so the copy is one
    access."""
    aligned = cute.make_ptr(cutlass.Float32, ptr.toint(), cute.AddressSpace.gmem, assumed_align=4 * vec)
    return cute.make_tensor(aligned, cute.make_layout(vec))


# The protocol, per warp: a writer's lanes fence their stores and lane 0 raises the counter; the
# reducer's lanes poll until the counter shows every writer, then fence and read.
@cute.jit
def _signal(counter, lane):
    # Each lane's stores are ordered before the warp meets; lane 0 then publishes them all.
    cute.arch.fence_acq_rel_gpu()
    cute.arch.sync_warp()
    if lane == 0:
        cute.arch.red(counter, cutlass.Int32(1), op="add", dtype=cutlass.Int32,
                      sem="release", scope="gpu")


@cute.jit
def _await(counter, writers):
    # Every lane polls and the exit is a warp vote, so the warp never diverges: a loop that only
    # lane 0 runs, inside a kernel's persistent loop, took that loop's warp-uniform values (the
    # attention kernel's WGMMA descriptors) off the uniform datapath.
    seen = cute.arch.load(counter, cutlass.Int32, sem="acquire", scope="gpu")
    while cute.arch.vote_any_sync(seen < writers):
        seen = cute.arch.load(counter, cutlass.Int32, sem="acquire", scope="gpu")
    cute.arch.fence_acq_rel_gpu()


@cute.jit
def _reset(counter, lane):
    if lane == 0:
        # Nothing else touches this counter in this launch; the next one starts from 0.
        cute.arch.store(counter, cutlass.Int32(0))
