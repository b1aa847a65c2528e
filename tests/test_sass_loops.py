"""The loops of a SASS listing (toolchain/sass_loops.py): nesting, iteration sizes, and what is
not a loop (the trap after EXIT, returns from slow paths placed after it)."""

from kernelscope.toolchain.sass_loops import find_loops, innermost

# A work loop (0x20-0x100) around a key-block loop (0x40-0xc0), an mbarrier wait placed after the
# last EXIT (its retry loop, then a branch back into the body), and the trap after EXIT.
LISTING = """
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   ISETP.NE.AND P0, PT, R0, RZ, PT ;
        /*0020*/                   UMOV UR4, 0x1 ;
        /*0030*/                   IMAD R1, R0, 0x4, RZ ;
        /*0040*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR4], R1 ;
        /*0050*/               @!P1 BRA 0x120 ;
        /*0060*/                   WARPGROUP.ARRIVE ;
        /*0070*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR16], R24 ;
        /*0080*/                   BAR.SYNC.DEFER_BLOCKING R14, 0x100 ;
        /*0090*/                   MUFU.EX2 R2, R2 ;
        /*00a0*/                   UIADD3 UR5, UR5, 0x1, URZ ;
        /*00b0*/                   ISETP.NE.AND P2, PT, R2, RZ, PT ;
        /*00c0*/                @P2 BRA 0x40 ;
        /*00d0*/                   FADD R3, R3, R2 ;
        /*00e0*/                   STSM.16.M88.4 [R5], R24 ;
        /*00f0*/                   ISETP.NE.AND P3, PT, R3, RZ, PT ;
        /*0100*/                @P3 BRA 0x20 ;
        /*0110*/                   EXIT ;
        /*0120*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR4], R1 ;
        /*0130*/               @!P1 BRA 0x120 ;
        /*0140*/                   BRA 0x60 ;
        /*0150*/                   BRA 0x150 ;
"""


def test_nested_loops_and_their_iterations():
    loops = find_loops(LISTING)
    assert [(l.start, l.end, l.depth) for l in loops] == [(0x20, 0x100, 1), (0x40, 0xc0, 2), (0x120, 0x130, 1)]
    work, block, wait = loops
    assert work.inner == 1 and block.inner == 0
    assert block.instructions == 9
    assert block.opcodes["HGMMA"] == 1 and block.opcodes["BAR"] == 1 and block.opcodes["MUFU"] == 1
    assert block.uniform_share == 1 / 9          # UIADD3; not WARPGROUP, not the TMA opcodes
    assert wait.wait_loop and not block.wait_loop and not work.wait_loop


def test_innermost_leaves_out_wait_loops_and_loops_around_others():
    loops = find_loops(LISTING)
    assert [(l.start, l.end) for l in innermost(loops)] == [(0x40, 0xc0)]


def test_nvdisasm_labels_resolve_like_hex_targets():
    labelled = LISTING.replace("        /*0040*/", ".L_x_1:\n        /*0040*/").replace("BRA 0x40 ;", "BRA `(.L_x_1) ;")
    assert [(l.start, l.end) for l in find_loops(labelled)] == [(l.start, l.end) for l in find_loops(LISTING)]


def test_a_listing_without_backward_branches_has_no_loop():
    straight = "\n".join(line for line in LISTING.splitlines() if "BRA" not in line)
    assert find_loops(straight) == []
    assert innermost([]) == []


def test_to_dict_is_plain_data():
    d = find_loops(LISTING)[1].to_dict()
    assert d["start"] == 0x40 and d["instructions"] == 9 and d["inner_loops"] == 0
    assert list(d["opcodes"].items())[0] == ("BRA", 2)     # the wait's branch out and the branch back
