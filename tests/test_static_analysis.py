"""Pieces of compile-only inspection: SASS opcode accounting, launch requests read from the
DSL's host IR, tool output readers. The compile-based checks use the
small example kernel in tests/examples/smem_reverse.py (seconds, no GPU)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kernelscope.errors import UserError
from kernelscope.profiler import dsl_compile
from kernelscope.toolchain import cubin, sass

EXAMPLE = Path(__file__).parent / "examples" / "smem_reverse.py"


def _example_module():
    spec = importlib.util.spec_from_file_location("smem_reverse_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------- opcodes

SASS_SNIPPET = """\
        Function : my_kernel
        /*0000*/                   LDC R1, c[0x0][0x28] ;                   /* 0x00000a00ff017b82 */
        /*0010*/              @!P0 STL.64 [R1], R2 ;                        /* 0x0000000201008387 */
        /*0020*/               @P1 STL.128 [R1+0x10], R4 ;
        /*0030*/                   STL [R1+0x20], R8 ;
        /*0040*/                   LDL.U8 R9, [R1+0x20] ;
        /*0050*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ;
        /*0060*/             @!UP0 HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24 ;
        /*0070*/                   BRA `(.L_x_0) ;
"""


def test_opcodes_histogram_and_local_traffic():
    opcodes = sass.sass_opcodes(SASS_SNIPPET)
    assert opcodes == ["LDC", "STL.64", "STL.128", "STL", "LDL.U8",
                       "HGMMA.64x128x16.F32.BF16", "HGMMA.64x128x16.F32.BF16", "BRA"]
    hist = sass.opcode_histogram(opcodes)
    assert hist == {"STL": 3, "HGMMA": 2, "BRA": 1, "LDC": 1, "LDL": 1}
    assert sass.local_memory_bytes(opcodes, "STL") == 8 + 16 + 4
    assert sass.local_memory_bytes(opcodes, "LDL") == 1


def test_expected_opcodes_match_base_or_full_form():
    opcodes = ["HGMMA.64x128x16.F32.BF16", "LDSM.16.M88.4", "BAR.SYNC.DEFER_BLOCKING"]
    assert sass.expected_opcodes_missing(["HGMMA", "LDSM.16.M88.4", "BAR"], opcodes) == []
    assert sass.expected_opcodes_missing(["HMMA", "LDSM.16.MT88", "UTMALDG"], opcodes) == \
        ["HMMA", "LDSM.16.MT88", "UTMALDG"]


def test_split_sass_functions_keeps_each_listing():
    text = SASS_SNIPPET + "        Function : other\n        /*0000*/   EXIT ;\n"
    listings = sass.split_sass_functions(text)
    assert list(listings) == ["my_kernel", "other"]
    assert sass.opcode_histogram(sass.sass_opcodes(listings["other"])) == {"EXIT": 1}


# ----------------------------------------------------------------------------- tool output readers

def test_resource_usage_reader():
    text = """
Resource usage:
 Common:
  GLOBAL:0
 Function kernel_a:
  REG:168 STACK:16 SHARED:1024 LOCAL:8 CONSTANT[0]:1108 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function kernel_b:
  REG:12 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:548 TEXTURE:0 SURFACE:0 SAMPLER:0
"""
    res = cubin.parse_resource_usage(text)
    assert (res["kernel_a"].registers, res["kernel_a"].stack_bytes, res["kernel_a"].shared_bytes,
            res["kernel_a"].local_bytes, res["kernel_a"].constant0_bytes) == (168, 16, 1024, 8, 1108)
    assert res["kernel_b"].registers == 12


def test_elf_facts_reader_both_barrier_forms():
    sm90 = """64bit elf: type=2, abi=7, sm=90a, toolkit=129, flags = 0x5a0d5a
.nv.info.kern
\t<0x8>
\tAttribute:\tEIATTR_REQNTID
\tFormat:\tEIFMT_SVAL
\tValue:\t0x80 0x1 0x1 
.text.kern
bar = 2\treg = 0\tlmem=0\tsmem=1024
0xff017b82 0x00000a00 0x00000800 0x000fe200
"""
    facts = cubin.parse_elf_facts(sm90)
    assert facts["kern"] == {"required_block": (128, 1, 1), "barriers": 2}
    assert cubin.elf_arch(sm90) == "sm_90a"
    sm120 = """64bit elf: type=2, abi=8, sm=120a, toolkit=130, flags = 0x0
.nv.info.kern
\tAttribute:\tEIATTR_NUM_BARRIERS
\tFormat:\tEIFMT_BVAL
\tValue:\t0x1
.text.kern
lmem=0\tsmem=1024
.nv.info.plain
\tAttribute:\tEIATTR_MAXREG_COUNT
\tValue:\t0xff
.text.plain
lmem=0\tsmem=0
"""
    facts = cubin.parse_elf_facts(sm120)
    assert facts["kern"]["barriers"] == 1
    assert facts["plain"]["barriers"] == 0
    assert cubin.elf_arch(sm120) == "sm_120a"
    # CUDA 13's cuobjdump spells the header differently.
    assert cubin.elf_arch("\n64-bit ELF: type=ET_EXEC, ABI=8, sm=100a, toolkit=12.9, flags=0x600640a\n") == "sm_100a"


# ----------------------------------------------------------------------------- launches in the host IR

@pytest.fixture(scope="module")
def recorded_example_compile(tmp_path_factory):
    spec = _example_module().SPEC
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KERNELSCOPE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        return dsl_compile.compile_artifacts(spec, {"threads": 256, "scratch": 0}, {"N": 16384}, "float32", "sm_90a")


def test_launch_request_read_from_the_compiled_host_code(recorded_example_compile):
    art = recorded_example_compile
    assert len(art.launches) == 1
    launch = art.launches[0]
    assert launch.grid == (16384 // 256, 1, 1)
    assert launch.block == (256, 1, 1)
    # The kernel allocates `threads` fp32 values in shared memory and lets the DSL size the launch.
    assert launch.dynamic_smem_bytes == 256 * 4
    assert launch.kernel and launch.kernel.startswith("kernel_")
    assert launch.cluster is None


def test_launches_from_ir_leaves_runtime_values_unknown():
    ir = """
  llvm.func @host(%arg0: i32) -> i32 {
    %7 = llvm.mlir.constant(1 : i32) : i32
    %8 = llvm.mlir.constant(256 : i32) : i32
    %10 = llvm.mlir.constant(48 : i64) : i64
    %12 = llvm.alloca %7 x !llvm.struct<(array<3 x i32>, array<3 x i32>, i64, ptr, ptr, i32)> : (i32) -> !llvm.ptr
    %15 = llvm.getelementptr %12[0, 1, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(array<3 x i32>, array<3 x i32>, i64, ptr, ptr, i32)>
    llvm.store %8, %15 : i32, !llvm.ptr
    %16 = llvm.getelementptr %12[0, 1, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(array<3 x i32>, array<3 x i32>, i64, ptr, ptr, i32)>
    llvm.store %7, %16 : i32, !llvm.ptr
    %17 = llvm.getelementptr %12[0, 1, 2] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(array<3 x i32>, array<3 x i32>, i64, ptr, ptr, i32)>
    llvm.store %7, %17 : i32, !llvm.ptr
    %18 = llvm.getelementptr %12[0, 2] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(array<3 x i32>, array<3 x i32>, i64, ptr, ptr, i32)>
    llvm.store %10, %18 : i64, !llvm.ptr
    %19 = llvm.getelementptr %12[0, 0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(array<3 x i32>, array<3 x i32>, i64, ptr, ptr, i32)>
    llvm.store %arg0, %19 : i32, !llvm.ptr
    %82 = llvm.mlir.addressof @kernels_kernel_rows_0 : !llvm.ptr
    %84 = llvm.call @_cudaLaunchKernelEx(%69, %83, %72) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  }
"""
    (launch,) = dsl_compile.launches_from_host_ir(ir)
    assert launch.kernel == "kernel_rows_0"
    assert launch.block == (256, 1, 1)
    assert launch.dynamic_smem_bytes == 48
    assert launch.grid is None      # sized by a run-time argument


# ----------------------------------------------------------------------------- nvdisasm -json

NVDISASM_JSON = """[{"ELF": {"layout-id": 4}, "SM": {"version": {"major": 9, "minor": 0}}},
 [{"function-name": "my_kernel", "start": 0, "length": 64, "other-attributes": [], "sass-instructions": [
   {"opcode": "LDC", "operands": "R1,c[0x0][0x28]"},
   {"predicate": "@!P0", "opcode": "STL.64", "operands": "[R1],R2"},
   {"opcode": "HGMMA.64x128x16.F32.BF16", "operands": "R24,gdesc[UR4],RZ,!UPT"},
   {"opcode": "EXIT", "operands": ""}]},
  {"function-name": "other", "start": 64, "length": 16, "sass-instructions": [{"opcode": "EXIT"}]}]]"""


def test_disassembly_json_gives_opcodes_per_function():
    functions = sass.parse_disassembly_json(NVDISASM_JSON)
    assert list(functions) == ["my_kernel", "other"]
    kernel = functions["my_kernel"]
    assert kernel.opcodes == ["LDC", "STL.64", "HGMMA.64x128x16.F32.BF16", "EXIT"]
    assert sass.local_memory_bytes(kernel.opcodes, "STL") == 8
    # The listing reads back to the same opcodes through the text reader.
    assert sass.sass_opcodes(kernel.listing()) == kernel.opcodes
    assert "@!P0 STL.64 [R1], R2 ;" in kernel.listing()
    with pytest.raises(UserError, match="nvdisasm -json"):
        sass.parse_disassembly_json('{"not": "a list"}')


def test_json_and_text_disassembly_agree_on_a_compiled_kernel(recorded_example_compile, tmp_path):
    path = tmp_path / "kernel.cubin"
    path.write_bytes(recorded_example_compile.cubin)
    from_json = {name: f.opcodes for name, f in sass.disassemble(str(path)).items()}
    from_text = {name: sass.sass_opcodes(text) for name, text in sass.dump_sass(str(path)).items()}
    assert from_json == from_text and all(from_json.values())
