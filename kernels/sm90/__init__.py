"""The Hopper (sm_90a) building blocks the shipped kernels share.

- device: the device's limits (shared memory per block, SM count) and a reader of the current
  GPU's properties. Plain Python.
- barriers: the named-barrier ids of each kernel family, as IntEnums. Plain Python.
- pipeline: the mbarrier ring between a TMA producer and its consumers, and the ring position
  that advances itself (an extension of cutlass.pipeline.PipelineState).
- pingpong: turn taking between math warpgroups over named barriers.
- softmax: the online (streaming) softmax of attention, as an object holding its row state.
- epilogue: accumulators -> shared memory -> TMA store.
- tile_scheduler: the persistent schedule over output tiles (raster order, grouping).
- warp_specialized: the set-up every producer/consumer GEMM-shaped kernel shares.

device and barriers import nothing from the DSL; the other modules import cutlass at the top
and are imported only by the kernel modules, which the kernels' spec modules import lazily.
"""
