"""The CUDA toolchain as kernelscope sees it: finding NVIDIA's binary tools and reading what
they say about a cubin (resources, ELF facts, SASS). The lowest layer: it imports nothing
of kernelscope but its error type, so kernels and the profiler can both use it."""
