"""The profiled region of the rule-kernel scripts: every launch once more (already warmed up) in
an NVTX range `rk:<name>` between cudaProfilerStart/Stop, so ncu with `--profile-from-start off`
captures exactly one launch per kernel."""


def launch_once_each_profiled(torch, launches) -> None:
    """launches: (name, callable) pairs."""
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for name, launch in launches:
        torch.cuda.nvtx.range_push(f"rk:{name}")
        launch()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print("launched:", ", ".join(name for name, _ in launches))
