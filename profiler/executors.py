"""Where the points of a sweep or the cases of a suite run: in this process, or on Dask.

The sweep logic talks to a `PointExecutor` only: `submit(tag, fn, *args)` queues one GPU task,
`results()` yields `(tag, value, error)` as tasks finish (tasks may be submitted while it
iterates, for retries), `cancel_all()` and `close()` end it. Another engine (Ray) is one more
class with these four methods.

Dask: `DaskExecutor.local(devices)` starts one scheduler and, per GPU, worker processes pinned
with CUDA_VISIBLE_DEVICES that each hold the resource GPU=1; `DaskExecutor.connect(address)`
submits to a running cluster whose GPU workers were started with `--resources GPU=1`. Each
task asks for GPU=1, so one worker runs one point at a time; several workers on one GPU
compile in parallel and take turns on the device (profiler.gpu_device.exclusive).
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections import deque
from typing import Any, Callable, Iterator

from kernelscope.errors import UserError

INSTALL_HINT = "pip install 'kernelscope[dask]'"
GPU_RESOURCE = {"GPU": 1}


class PointExecutor:
    """The interface; `describe` is one line for the terminal."""

    def submit(self, tag: Any, fn: Callable, *args: Any) -> None:
        raise NotImplementedError

    def results(self) -> Iterator[tuple[Any, Any, str | None]]:
        raise NotImplementedError

    def cancel_all(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


class SerialExecutor(PointExecutor):
    """One task after another in this process, on its current GPU."""

    def __init__(self) -> None:
        self._queue: deque = deque()

    def submit(self, tag, fn, *args):
        self._queue.append((tag, fn, args))

    def results(self):
        while self._queue:
            tag, fn, args = self._queue.popleft()
            try:
                value = fn(*args)
            except Exception as e:  # the task's own failure: reported, the sweep goes on
                yield tag, None, _one_line(e)
            else:
                yield tag, value, None

    def cancel_all(self):
        self._queue.clear()

    def close(self):
        self._queue.clear()

    def describe(self):
        return "serial, in this process"


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def import_dask():
    try:
        import dask  # noqa: F401
        import distributed
    except ImportError:
        raise UserError(f"--gpus and --scheduler need Dask, which is not installed: {INSTALL_HINT}",
                        exit_code=3) from None
    return distributed


def visible_gpus(spec: str) -> list[str]:
    """`all` -> the GPUs this host shows (within CUDA_VISIBLE_DEVICES); `0,1` -> those."""
    if spec != "all":
        ids = [p.strip() for p in spec.split(",") if p.strip()]
        if not ids or not all(p.isdigit() or p.startswith(("GPU-", "MIG-")) for p in ids):
            raise UserError(f"--gpus {spec!r}: give `all` or device indices such as 0,1")
        return ids
    pinned = os.environ.get("CUDA_VISIBLE_DEVICES")
    if pinned is not None:
        ids = [p.strip() for p in pinned.split(",") if p.strip()]
    else:
        try:
            r = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=60)
            ids = [ln.strip() for ln in r.stdout.splitlines() if ln.strip()] if r.returncode == 0 else []
        except (OSError, subprocess.TimeoutExpired):
            ids = []
    if not ids:
        raise UserError("--gpus all: no GPU is visible on this host", exit_code=3)
    return ids


class DaskExecutor(PointExecutor):
    def __init__(self, client, cluster=None, description: str = ""):
        self._client = client
        self._cluster = cluster
        self._futures: dict = {}          # future -> (worker address, tag)
        self._queue: deque = deque()
        self._failed_on: dict = {}        # tag -> the worker it failed on (a retry goes elsewhere)
        self._description = description
        self.worker_wait_s = 300.0

    @classmethod
    def local(cls, devices: list[str], workers_per_gpu: int = 2) -> "DaskExecutor":
        """A scheduler in this process and `workers_per_gpu` worker processes per GPU."""
        distributed = import_dask()
        import dask

        workers = {}
        # Every worker's host work (copies, the fp32 check, compiles) shares this host's cores:
        # torch's default of one thread per core in each of them oversubscribes the CPU and
        # slows the worker holding the GPU (H100, 8 workers: 4x longer under the lock than serial).
        threads = str(max(1, (os.cpu_count() or 1) // max(1, len(devices) * workers_per_gpu)))
        for device in devices:
            for slot in range(workers_per_gpu):
                workers[f"gpu{device}-{slot}"] = {
                    "cls": distributed.Nanny,
                    "options": {"nthreads": 1, "resources": dict(GPU_RESOURCE), "memory_limit": 0,
                                "dashboard_address": ":0", "silence_logs": logging.CRITICAL,
                                "env": {"CUDA_VISIBLE_DEVICES": device, "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                                        "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}}}
        scheduler = {"cls": distributed.Scheduler, "options": {"dashboard_address": ":0"}}
        # The progress view speaks for the workers; Dask's own INFO lines would bury it.
        logging.getLogger("distributed").setLevel(logging.ERROR)
        # A worker that dies fails its task at once; the sweep retries it once itself, recording why.
        with dask.config.set({"distributed.scheduler.allowed-failures": 0, "logging.distributed": "error"}):
            cluster = distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=40)
            client = distributed.Client(cluster)
        return cls(client, cluster, f"local Dask cluster: {len(devices)} GPU(s) x {workers_per_gpu} worker(s)")

    @classmethod
    def connect(cls, address: str) -> "DaskExecutor":
        distributed = import_dask()
        try:
            client = distributed.Client(address, timeout="30s")
        except (OSError, TimeoutError) as e:
            raise UserError(f"cannot reach the Dask scheduler at {address}: {_one_line(e)}", exit_code=3) from None
        gpus = [w for w in client.scheduler_info().get("workers", {}).values()
                if (w.get("resources") or {}).get("GPU", 0) >= 1]
        if not gpus:
            client.close()
            raise UserError(f"the Dask cluster at {address} has no worker with a GPU resource: start its GPU "
                            "workers with `--resources GPU=1` (one per GPU)", exit_code=3)
        return cls(client, None, f"Dask cluster at {address}: {len(gpus)} GPU worker(s)")

    def submit(self, tag, fn, *args):
        self._queue.append((tag, fn, args))

    def _gpu_workers(self) -> list[str]:
        info = self._client.scheduler_info()
        return sorted(a for a, w in info.get("workers", {}).items() if (w.get("resources") or {}).get("GPU", 0) >= 1)

    def _fill(self) -> None:
        """One task per idle GPU worker, placed explicitly: when a worker dies, the only task it
        held is the one that killed it (or died with it), and its retry can go elsewhere."""
        busy = {addr for addr, _ in self._futures.values()}
        idle = [a for a in self._gpu_workers() if a not in busy]
        while self._queue and idle:
            tag, fn, args = self._queue[0]
            avoid = self._failed_on.get(tag)
            addr = next((a for a in idle if a != avoid), idle[0])
            idle.remove(addr)
            self._queue.popleft()
            future = self._client.submit(fn, *args, resources=dict(GPU_RESOURCE), pure=False,
                                         workers=[addr], allow_other_workers=False)
            self._futures[future] = (addr, tag)

    def results(self):
        from distributed import wait
        from distributed.scheduler import KilledWorker

        waited_for_workers = 0.0
        while self._queue or self._futures:
            self._fill()
            if not self._futures:
                # Every GPU worker is gone for now (a nanny restarting one, a node joining).
                if waited_for_workers > self.worker_wait_s:
                    raise UserError(f"no GPU worker has been available for {self.worker_wait_s:.0f} s; "
                                    f"{len(self._queue)} point(s) not run", exit_code=3)
                time.sleep(1.0)
                waited_for_workers += 1.0
                continue
            waited_for_workers = 0.0
            done = wait(list(self._futures), timeout=None, return_when="FIRST_COMPLETED").done
            for future in done:
                addr, tag = self._futures.pop(future)
                try:
                    value = future.result()
                except KilledWorker as e:
                    self._failed_on[tag] = addr
                    yield tag, None, f"the worker died while running it ({_one_line(e)})"
                except Exception as e:  # the task raised: reported, the sweep goes on
                    self._failed_on[tag] = addr
                    yield tag, None, _one_line(e)
                else:
                    yield tag, value, None

    def cancel_all(self):
        if self._futures:
            self._client.cancel(list(self._futures), force=True)
            self._futures.clear()
        self._queue.clear()

    def close(self):
        try:
            self._client.close()
        finally:
            if self._cluster is not None:
                self._cluster.close()

    def describe(self):
        return self._description


def make_executor(gpus: str | None, scheduler: str | None, workers_per_gpu: int = 2) -> PointExecutor:
    """The executor the command line asks for: DASK_SCHEDULER_ADDRESS counts as --scheduler."""
    scheduler = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS") or None
    if gpus and scheduler:
        raise UserError("give --gpus (a cluster on this host) or --scheduler (an existing cluster), not both")
    if workers_per_gpu < 1:
        raise UserError("--workers-per-gpu must be at least 1")
    if scheduler:
        return DaskExecutor.connect(scheduler)
    if gpus:
        import_dask()
        devices = visible_gpus(gpus)
        return DaskExecutor.local(devices, workers_per_gpu)
    return SerialExecutor()
