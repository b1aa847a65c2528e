"""Serialized WGMMA groups found in SASS listings (profiler/wgmma_waits.py), on listings shaped as
cuobjdump prints them; the compiled variants of tests/rule_kernels/gmma_bound.py are checked in
tests/test_rule_kernels_gmma.py."""

from kernelscope.profiler.wgmma_waits import wgmma_waits


def _listing(*body: str) -> str:
    lines, address = [], 0
    for ins in body:
        if ins.endswith(":"):
            lines.append(ins)
            continue
        lines.append(f"        /*{address:04x}*/                   {ins} ;")
        address += 16
    return "\n".join(lines) + "\n"


GROUP = ("WARPGROUP.ARRIVE", "HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], R24",
         "HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], R24, gsb0")


def test_a_loop_waiting_at_depth_zero_after_each_group_is_serialized():
    sass = _listing(".L_x_4:", *GROUP, "WARPGROUP.DEPBAR.LE gsb0, 0x0", "@P0 BRA `(.L_x_4)",
                    "WARPGROUP.DEPBAR.LE gsb0, 0x0", "STG.E [R2], R24", "EXIT")
    assert wgmma_waits(sass).groups == 1 and wgmma_waits(sass).serialized == 1


def test_a_loop_keeping_groups_in_flight_is_not():
    sass = _listing(".L_x_4:", *GROUP, "WARPGROUP.DEPBAR.LE gsb0, 0x1", "@P0 BRA `(.L_x_4)",
                    "WARPGROUP.DEPBAR.LE gsb0, 0x0", "STG.E [R2], R24", "EXIT")
    assert (wgmma_waits(sass).groups, wgmma_waits(sass).serialized) == (1, 0)


def test_unrolled_groups_each_waited_for_are_serialized_but_the_last_before_the_epilogue_is_not():
    sass = _listing(*GROUP, "WARPGROUP.DEPBAR.LE gsb0, 0x0", *GROUP, "WARPGROUP.DEPBAR.LE gsb0, 0x0",
                    *GROUP, "WARPGROUP.DEPBAR.LE gsb0, 0x0", "STG.E [R2], R24", "EXIT")
    assert (wgmma_waits(sass).groups, wgmma_waits(sass).serialized) == (3, 2)


def test_a_forward_branch_after_the_wait_is_no_loop_and_groups_issued_back_to_back_are_in_flight():
    forward = _listing(*GROUP, "WARPGROUP.DEPBAR.LE gsb0, 0x0", "@P0 BRA `(.L_x_9)", "STG.E [R2], R24",
                       ".L_x_9:", "EXIT")
    assert wgmma_waits(forward).serialized == 0
    back_to_back = _listing(*GROUP, *GROUP, "WARPGROUP.DEPBAR.LE gsb0, 0x0", "EXIT")
    assert (wgmma_waits(back_to_back).groups, wgmma_waits(back_to_back).serialized) == (2, 0)
    assert wgmma_waits(_listing("FFMA R1, R2, R3, R4", "EXIT")).groups == 0


def test_branch_targets_written_as_addresses_are_followed_too():
    # cuobjdump --dump-sass: `@P0 BRA 0x10` back to the ARRIVE at /*0010*/.
    sass = _listing("MOV R1, R2", *GROUP, "WARPGROUP.DEPBAR.LE gsb0, 0x0", "@P0 BRA 0x10", "EXIT")
    assert wgmma_waits(sass).serialized == 1
    forward = _listing("MOV R1, R2", *GROUP, "WARPGROUP.DEPBAR.LE gsb0, 0x0", "@P0 BRA 0x70", "STG.E [R2], R24", "EXIT")
    assert wgmma_waits(forward).serialized == 0
