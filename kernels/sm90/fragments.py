"""Register fragments as the kernels index them flat (kernels that view a fragment as a plain run
of registers: flash_attn's P over S, gemm_rmsnorm's bf16 pairs as 32-bit words). Checked at trace
time; nothing here emits code."""


def check_compact(*fragments) -> None:
    """Register i of each fragment holds value i (in the order of the fragment's shape)."""
    for frag in fragments:
        size = 1
        for extent in _flatten(frag.shape):
            size *= extent
        if any(frag.layout(i) != i for i in range(size)):
            raise AssertionError(f"register fragment {frag.layout} is not compact in value order")


def _flatten(shape):
    if isinstance(shape, int):
        return [shape]
    return [x for part in shape for x in _flatten(part)]
