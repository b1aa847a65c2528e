"""Static facts that a recorded report's JSON lacks, from a CPU compile of the same corpus.

The trimmed reports under reports/ keep the static__ facts that `show --sass-facts` read from each
kernel's SASS when they were recorded, not the SASS itself. When profiler/report_sass.py learns a
new fact, the raw reports are gone (they stay on the GPU machine), but the planted kernels' code is
not: corpus.cu compiled by the same nvcc with profile_corpus.sh's flags is the code the report
holds. This script compiles it, checks that every fact the report already has equals the compile's
(every kernel, read up to the report reader's 16,384-instruction cap), and only then writes the
facts the report lacks, saying so under the document's `compiled_sass_facts`.

    python3 benchmarks/diagnosis/compiled_sass_facts.py reports/planted-basic-sass.json.xz [--check]

Needs nvcc and cuobjdump (CUDA 13.0's nvcc made the recorded reports); no GPU. Exit 1 when a fact
differs (nothing is written then), 3 when the tools are missing.
"""

from __future__ import annotations

import argparse
import json
import lzma
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kernelscope.profiler.report_sass import MAX_INSTRUCTIONS, sass_facts
from kernelscope.toolchain.sass import dump_sass, sass_instruction_texts
from kernelscope.toolchain.tools import which_cuda_tool

HERE = Path(__file__).resolve().parent
# profile_corpus.sh's build, as a cubin.
NVCC_FLAGS = ["-O3", "-arch=sm_90a", "-lineinfo", "-cubin"]


def compile_listings(nvcc: str) -> dict[str, str]:
    """The corpus's SASS listing per function, built as profile_corpus.sh builds it."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "corpus.cubin"
        subprocess.run([nvcc, *NVCC_FLAGS, "-o", str(cubin), str(HERE / "corpus.cu")], check=True,
                       capture_output=True)
        return dump_sass(str(cubin))


def listing_facts(listings: dict[str, str]) -> dict[str, dict]:
    """Each function's facts as a report's reader counts them (up to its instruction cap), as JSON entries."""
    facts = {}
    for name, listing in listings.items():
        code = sass_instruction_texts(listing)[:MAX_INSTRUCTIONS]
        facts[name] = {k: {"value": m.value, "unit": m.unit} for k, m in sass_facts(code).items()}
    return facts


def merge_facts(doc: dict, compiled: dict[str, dict]) -> tuple[int, set[str], list[str]]:
    """Into each kernel of `doc` whose SASS the report read, the compiled facts it lacks. Returns the
    kernels checked, the facts added and every mismatch between a recorded fact and the compile's."""
    checked, added, mismatches = 0, set(), []
    for kernel in doc["kernels"]:
        profile = kernel["profile"]
        metrics = profile["metrics"]
        if "static__sass_instructions" not in metrics:
            continue                                   # a kernel whose SASS the report did not read
        name = profile.get("mangled_name") or profile["name"]
        mine = compiled.get(name)
        if mine is None:
            mismatches.append(f"{name}: not in the compile")
            continue
        for key, entry in metrics.items():
            if key.startswith("static__") and key in mine and mine[key]["value"] != entry["value"]:
                mismatches.append(f"{name}: {key} {entry['value']} in the report, {mine[key]['value']} compiled")
        checked += 1
        for key, entry in mine.items():
            if key not in metrics:
                metrics[key] = entry
                added.add(key)
    return checked, added, mismatches


def read_document(path: Path) -> dict:
    return json.loads(lzma.open(path).read() if path.suffix == ".xz" else path.read_bytes())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("report", help="a trimmed show JSON (.json or .json.xz) of corpus.cu's kernels")
    p.add_argument("--check", action="store_true", help="compare only; write nothing")
    args = p.parse_args(argv)

    nvcc = shutil.which("nvcc")
    if nvcc is None or which_cuda_tool("cuobjdump") is None:
        print("error: nvcc and cuobjdump are needed", file=sys.stderr)
        return 3
    path = Path(args.report)
    doc = read_document(path)
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    checked, added, mismatches = merge_facts(doc, listing_facts(compile_listings(nvcc)))
    if mismatches:
        print("\n".join(mismatches[:20]), file=sys.stderr)
        print(f"error: {len(mismatches)} fact(s) differ: the compile is not the recorded code; nothing written",
              file=sys.stderr)
        return 1
    print(f"{checked} kernels: every recorded static fact equals the compile's ({version})")
    if args.check or not added:
        print("nothing added" if not added else f"would add: {', '.join(sorted(added))}")
        return 0
    note = doc.setdefault("compiled_sass_facts", {"facts": [], "how": ""})
    note["facts"] = sorted(set(note["facts"]) | added)
    note["how"] = (f"benchmarks/diagnosis/compiled_sass_facts.py: corpus.cu compiled with nvcc {' '.join(NVCC_FLAGS)} "
                   f"({version}); every fact the report read itself equalled the compile's for all {checked} kernels")
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    if path.suffix == ".xz":
        text = lzma.compress(text, preset=9 | lzma.PRESET_EXTREME)
    path.write_bytes(text)
    print(f"added {', '.join(sorted(added))}; wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
