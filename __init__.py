"""kernelscope: profiling and diagnostics for CuTe DSL kernels on Hopper."""

__version__ = "0.1.0"
