"""The static facts of a kernel's SASS, read from the report itself (profiler/report_sass.py): any ncu
report holds each profiled function's code, whatever sections it collected."""

from kernelscope.profiler import report_sass
from kernelscope.profiler.report import load_report
from kernelscope.profiler.selection import sass_facts_for
from kernelscope.toolchain.sass import instruction_opcode


class FakeMetric:
    def __init__(self, value):
        self.value = value

    def num_instances(self):
        return 1

    def as_uint64(self, i):
        return self.value


class FakeAction:
    """An action whose function starts at `start` and holds `code`, as ncu_report answers."""
    NameBase_MANGLED = 1
    NameBase_FUNCTION = 2

    def __init__(self, name, start, code):
        self._name, self.start, self.code, self.reads = name, start, code, 0

    def name(self, base=None):
        return self._name

    def metric_by_name(self, name):
        return FakeMetric(self.start) if name == report_sass.FUNCTION_PCS else None

    def sass_by_pc(self, pc):
        self.reads += 1
        i = (pc - self.start) // report_sass.INSTRUCTION_BYTES
        return f"      {self.code[i]}" if 0 <= i < len(self.code) else ""


CODE = ["LDC R1, c[0x0][0x28]", "@P0 STL.64 [R1+0x8], R2", "LDL R4, [R1]", "MEMBAR.SC.GPU", "ATOMS.ADD RZ, [R3], R5",
        "BAR.SYNC.DEFER_BLOCKING 0x0", "@!P1 MEMBAR.ALL.GPU", "EXIT", "BRA `(.L_x_0)", "NOP"]


def test_facts_of_a_function_read_instruction_by_instruction():
    facts = report_sass.sass_facts(report_sass.function_sass(FakeAction("k", 0x7F00, CODE)))
    values = {k: m.value for k, m in facts.items()}
    assert values == {"static__sass_instructions": 10, "static__sass_read_complete": 1,
                      "static__spill_store_bytes": 8, "static__spill_load_bytes": 4,
                      "static__membar_instructions": 2, "static__shared_atomic_instructions": 1,
                      "static__bar_instructions": 1, "static__special_function_instructions": 0, "static__fchk_instructions": 0,
                      "static__hmma_instructions": 0, "static__mul_high_instructions": 0,
                      "static__global_load_instructions": 0, "static__global_store_instructions": 0,
                      "static__global_atomic_instructions": 0}
    assert instruction_opcode("@!P0 STL.128 [R1+0x8], R4;") == "STL.128" and instruction_opcode("  EXIT ;") == "EXIT"
    assert report_sass.function_sass(FakeAction("k", None, CODE)) is None      # no start address: no facts


# What the compiler makes of `q / sqrtf(d)`, `i % n` and a half-K mma.sync (as in corpus_set13.cuh,
# corpus_set8.cuh and corpus_set12.cuh's slow kernels).
ARITHMETIC = ["MUFU.RSQ R5, R4", "FCHK P0, R2, R5", "@!P0 BRA `(.L_x_1)", "MUFU.RCP R7, R5",
              "I2F.U32.RP R6, R8", "MUFU.RCP R6, R6", "F2I.FTZ.U32.TRUNC.NTZ R9, R6",
              "IMAD.HI.U32 R3, R9, R8, RZ", "ISETP.GE.U32.AND P1, PT, R4, R6, PT", "@P1 IADD3 R4, R4, -R6, RZ",
              "HMMA.1688.F32 R12, R4, R8, R12", "HMMA.1688.F32 R16, R4, R10, R16", "HMMA.16816.F32.BF16 R20, R4, R8, R20",
              "IMAD.WIDE.U32 R2, R3, 0x4, R2", "EXIT"]


def test_the_code_says_which_arithmetic_it_does():
    facts = {k: m.value for k, m in report_sass.sass_facts(ARITHMETIC).items()}
    # The third MUFU is the reciprocal of an integer divisor (after its I2F.U32.RP): not counted.
    assert facts["static__special_function_instructions"] == 2 and facts["static__fchk_instructions"] == 1
    assert facts["static__mul_high_instructions"] == 1         # IMAD.WIDE is address math, not a division
    assert facts["static__hmma_instructions"] == 3
    assert facts["static__hmma_products_per_instruction"] == (1024 + 1024 + 2048) / 3
    assert "static__hmma_products_per_instruction" not in report_sass.sass_facts(CODE)   # no HMMA: no shape
    from kernelscope.toolchain.sass import hmma_products
    assert hmma_products("HMMA.16816.F32.BF16") == 2048 and hmma_products("HMMA.1684.F32.TF32") == 512
    assert hmma_products("HGMMA.64x128x16.F32.BF16") is None and hmma_products("HMMA.SP.16832.F32") is None


MEMORY = ["LDG.E R4, desc[UR6][R2.64]", "LDG.E.128.CONSTANT R8, desc[UR6][R6.64]", "@!P0 LDG.E.U8 R3, desc[UR6][R2.64]",
          "STG.E.64 desc[UR6][R10.64], R4", "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR6][R2.64], R5",
          "ATOMG.E.ADD.STRONG.GPU PT, R7, desc[UR6][R2.64], R9", "ATOMS.ADD RZ, [R3], R4",
          "LDGSTS.E [R11], desc[UR6][R8.64]", "LDGDEPBAR", "DEPBAR.LE SB0, 0x1", "@P0 DEPBAR.LE SB0, 0x0",
          "BAR.SYNC.DEFER_BLOCKING 0x0", "EXIT"]


def test_the_code_says_how_wide_its_global_accesses_are_and_how_its_copies_wait():
    facts = {k: m.value for k, m in report_sass.sass_facts(MEMORY).items()}
    assert facts["static__global_load_instructions"] == 3
    assert facts["static__global_load_bytes_per_instruction"] == (4 + 16 + 1) / 3
    assert (facts["static__global_store_instructions"], facts["static__global_store_bytes_per_instruction"]) == (1, 8)
    assert facts["static__global_atomic_instructions"] == 2        # REDG and ATOMG; ATOMS is shared memory's
    assert facts["static__async_copy_groups_in_flight"] == 1      # the most any wait leaves
    # No loads: no width (not 0); no cp.async: no wait fact, whatever DEPBAR the code holds.
    bare = {k: m.value for k, m in report_sass.sass_facts(["DEPBAR.LE SB0, 0x0", "EXIT"]).items()}
    assert bare["static__global_load_instructions"] == 0 and "static__global_load_bytes_per_instruction" not in bare
    assert "static__async_copy_groups_in_flight" not in bare
    drained = report_sass.sass_facts(["LDGSTS.E [R1], desc[UR6][R2.64]", "LDGDEPBAR", "DEPBAR.LE SB0, 0x0"])
    assert drained["static__async_copy_groups_in_flight"].value == 0
    # nvdisasm -json's operands, as `inspect` joins them (no space after the comma).
    joined = report_sass.async_copy_facts(["LDGSTS.E [R1], desc[UR6][R2.64]", "DEPBAR.LE SB0,0x2"])
    assert joined["static__async_copy_groups_in_flight"].value == 2
    # A cuobjdump listing gives the same instructions, operands and all.
    from kernelscope.toolchain.sass import sass_instruction_texts, sass_opcodes
    listing = "".join(f"        /*{16 * i:04x}*/                   {text} ;                /* 0x000 */\n"
                      for i, text in enumerate(MEMORY))
    assert sass_instruction_texts(listing) == MEMORY and len(sass_opcodes(listing)) == len(MEMORY)


def test_a_long_function_is_read_up_to_the_cap_and_says_so(monkeypatch):
    monkeypatch.setattr(report_sass, "MAX_INSTRUCTIONS", 4)
    facts = report_sass.sass_facts(report_sass.function_sass(FakeAction("k", 0, CODE)))
    assert facts["static__sass_instructions"].value == 4 and facts["static__sass_read_complete"].value == 0


def test_functions_are_told_apart_by_address_not_name():
    # CuTe DSL kernels compiled from one Python function share a name across modules.
    seen = {}
    spills = FakeAction("kernel_cutlass_kernel", 0x1000, CODE)
    clean = FakeAction("kernel_cutlass_kernel", 0x9000, ["LDC R1, c[0x0][0x28]", "EXIT"])
    assert report_sass.read_sass_facts(spills, seen)["static__spill_store_bytes"].value == 8
    assert report_sass.read_sass_facts(clean, seen)["static__spill_store_bytes"].value == 0
    again = FakeAction("kernel_cutlass_kernel", 0x1000, CODE)
    assert report_sass.read_sass_facts(again, seen)["static__spill_store_bytes"].value == 8 and again.reads == 0


def test_a_real_report_holds_its_kernels_code(fixture_file):
    path = fixture_file("h200-gemm-vs-cublas-4096.quick.ncu-rep")
    ours, cublas = load_report(path, static_sass=True)
    assert ours.metrics["static__sass_instructions"].value > 1000 and ours.metrics["static__sass_read_complete"].value == 1
    assert ours.metrics["static__spill_store_bytes"].value == 0 and ours.metrics["static__bar_instructions"].value > 0
    assert cublas.metrics["static__sass_instructions"].value > 1000
    # Only where asked: a plain read carries none of them.
    assert not [k for k in load_report(path)[0].metrics if k.startswith("static__")]
    # The arithmetic, from real code: our RMSNorm's one rsqrt against torch's layer norm dividing by N
    # with IEEE rounding (FCHK), and the ldmatrix GEMM's m16n8k16 mma.sync.
    ours, torch_norm = load_report(fixture_file("h200-rmsnorm-vs-torch.quick.ncu-rep"), static_sass=True)[:2]
    assert ours.metrics["static__special_function_instructions"].value == 1 and ours.metrics["static__fchk_instructions"].value == 0
    assert torch_norm.metrics["static__fchk_instructions"].value == 2
    mma = load_report(fixture_file("h200-gemm-mma-ldsm.ncu-rep"), static_sass=True)[0]
    assert mma.metrics["static__hmma_instructions"].value > 0
    assert mma.metrics["static__hmma_products_per_instruction"].value == 16 * 8 * 16
    assert "static__hmma_products_per_instruction" not in cublas.metrics      # HGMMA only


def test_diff_reads_the_code_only_where_the_report_counts_no_instructions(fixture_file):
    picked = sass_facts_for(None)
    full, _ = load_report(fixture_file("h200-gemm-vs-cublas-4096.quick.ncu-rep"))
    assert report_sass.INSTRUCTIONS_EXECUTED in full.metrics and not picked(full)
    coarse = full.__class__(**{**vars(full), "metrics": {k: v for k, v in full.metrics.items()
                                                          if k != report_sass.INSTRUCTIONS_EXECUTED}})
    assert picked(coarse)
    only_first = sass_facts_for("@0")
    assert only_first(coarse) is (coarse.index == 0)


def test_the_selection_limits_the_read(fixture_file):
    path = fixture_file("h200-gemm-vs-cublas-4096.quick.ncu-rep")
    chosen = load_report(path, static_sass=lambda p: p.index == 1)
    assert "static__sass_instructions" not in chosen[0].metrics and "static__sass_instructions" in chosen[1].metrics


def test_a_profile_run_reads_the_code_only_without_instruction_counts(fixture_file):
    from kernelscope.profiler.sources import load_profile_run

    target, reference, _ = load_profile_run(fixture_file("h200-rmsnorm-vs-torch.quick.ncu-rep"))
    assert report_sass.INSTRUCTIONS_EXECUTED in target.metrics
    assert not [k for k in target.metrics if k.startswith("static__")]
