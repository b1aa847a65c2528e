"""Shapes, configs, targets and references as the user types them (no GPU needed)."""

import os

import pytest

from kernelscope.errors import UserError
from kernelscope.kernels import references, registry
from kernelscope.profiler import assignments, measure

EXAMPLE = os.path.join(os.path.dirname(__file__), "examples", "my_scale.py")


def test_parse_value_types():
    assert assignments.parse_value("4") == 4
    assert assignments.parse_value("0.5") == 0.5
    assert assignments.parse_value("true") is True and assignments.parse_value("False") is False
    assert assignments.parse_value("none") is None
    assert assignments.parse_value("2x1") == (2, 1) == assignments.parse_value("(2, 1)")
    assert assignments.parse_value("row") == "row" == assignments.parse_value("'row'")


def test_parse_shape_and_errors():
    assert assignments.parse_shape("M=4096, N=8192") == {"M": 4096, "N": 8192}
    for bad in ("M4096", "M=abc", "M=-1", "", "=4"):
        with pytest.raises(UserError):
            assignments.parse_shape(bad)


def test_zero_size_only_for_flag_keys():
    from kernelscope.kernels.registry import resolve as get_spec
    flash = get_spec("flash_attn")
    measure.check_shape_keys(flash, assignments.parse_shape("B=1,H=2,S=256,D=64,causal=0"))
    with pytest.raises(UserError, match="size of S must be positive"):
        measure.check_shape_keys(flash, assignments.parse_shape("B=1,H=2,S=0,D=64,causal=1"))
    with pytest.raises(UserError, match="size of M must be positive"):
        measure.check_shape_keys(get_spec("gemm"), assignments.parse_shape("M=0,N=128,K=128"))


def test_parse_config_single_and_several():
    parse = assignments.parse_config
    assert parse(("threads=256", "vec=8")) == {"threads": 256, "vec": 8}
    assert parse(("threads=256,cluster=(2, 1)", "raster=m", "pingpong=false")) == {
        "threads": 256, "cluster": (2, 1), "raster": "m", "pingpong": False}
    assert parse(("stages=2,3,4", "pingpong=true,false"), several=True) == {
        "stages": [2, 3, 4], "pingpong": [True, False]}
    assert parse(("threads=128,256,vec=4,8",), several=True) == {"threads": [128, 256], "vec": [4, 8]}
    assert parse(("name='a,b'",)) == {"name": "a,b"}
    with pytest.raises(UserError, match="KEY=VALUE"):
        parse(("threads",))
    with pytest.raises(UserError, match="KEY=VALUE"):
        parse(("threads=",), several=True)
    with pytest.raises(UserError, match="one value per key"):
        parse(("stages=2,3",))


def test_every_command_reads_config_and_shape_text_alike(monkeypatch, capsys):
    # run/profile/sweep and inspect hand the same text to the same parser.
    from kernelscope.cli import run_commands
    from kernelscope.cli.main import main
    from kernelscope.profiler import static

    seen = {}

    def fake_inspect_target(target, *, config=None, shape=None, **kw):
        seen.update(config=config, shape=shape)
        raise UserError("stop here")

    monkeypatch.setattr(static, "inspect_target", fake_inspect_target)
    text = "stages=4,cluster=2x1,raster='m'"
    with pytest.raises(SystemExit) as exit_:
        main(["inspect", "gemm", "--config", text, "--shape", "M=256,N=512"])
    assert exit_.value.code == 2 and "stop here" in capsys.readouterr().err
    assert seen == {"config": assignments.parse_config([text]), "shape": {"M": 256, "N": 512}}
    assert seen["config"] == {"stages": 4, "cluster": (2, 1), "raster": "m"}
    _, _, _, config = run_commands._spec_and_shapes("gemm", ("M=256,N=512,K=64",), None, (text,), several=False)
    assert config == seen["config"]


def test_combinations_cover_the_product_over_the_default():
    combos = measure.combinations({"a": [1, 2], "b": [True, False]}, {"a": 0, "c": "x"})
    assert len(combos) == 4
    assert {(c["a"], c["b"]) for c in combos} == {(1, True), (1, False), (2, True), (2, False)}
    assert all(c["c"] == "x" for c in combos)


def test_format_round_trips_through_parse():
    cfg = {"cluster": (2, 1), "pingpong": False, "stages": 3}
    assert assignments.parse_config([assignments.format_config(cfg)]) == cfg
    assert assignments.format_shape({"M": 1, "N": 2}) == "M=1,N=2"
    assert assignments.parse_shape(assignments.format_shape({"M": 1, "N": 2})) == {"M": 1, "N": 2}


def test_registry_resolves_names_and_files():
    assert registry.resolve("rmsnorm").name == "rmsnorm"
    assert registry.resolve(f"{EXAMPLE}:SPEC").name == "my_scale"


@pytest.mark.parametrize("target,fragment", [
    ("nosuch", "unknown target"),
    ("tests/examples/absent.py:SPEC", "no such file"),
    (f"{EXAMPLE}:NOPE", "defines no NOPE"),
    (EXAMPLE, "name the spec too"),
])
def test_registry_errors_are_one_line(target, fragment):
    with pytest.raises(UserError) as e:
        registry.resolve(target)
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_shape_and_config_keys_are_checked():
    spec = registry.resolve("rmsnorm")
    with pytest.raises(UserError, match="shape keys"):
        measure.check_shape_keys(spec, {"M": 1, "K": 2})
    with pytest.raises(UserError, match="no config key"):
        measure.check_config_keys(spec, {"stages": 3})
    measure.check_config_keys(spec, {"threads": 128})


def test_reference_not_applicable_unknown_or_missing():
    import torch

    spec = registry.resolve("rmsnorm")
    inputs = spec.make_inputs({"M": 4, "N": 64}, "bfloat16", 0, "cpu")
    with pytest.raises(UserError, match="does not apply"):
        references.bind("cublas", spec, inputs)
    with pytest.raises(UserError, match="unknown reference"):
        references.bind("cudnn.magic", spec, inputs)
    # torch.rmsnorm does apply, and computes on the CPU too.
    out = references.bind("torch.rmsnorm", spec, inputs)()
    torch.testing.assert_close(out.float(), spec.reference_fp32(inputs), atol=3e-2, rtol=3e-2)
    assert references.default_for(spec) == "torch.rmsnorm"


def test_reference_needing_an_absent_package(monkeypatch):
    spec = registry.resolve("rmsnorm")
    inputs = spec.make_inputs({"M": 4, "N": 64}, "bfloat16", 0, "cpu")
    monkeypatch.setattr(references, "installed", lambda name: False)
    with pytest.raises(UserError, match="not installed"):
        references.bind("quack.rmsnorm", spec, inputs)


def test_user_spec_torch_reference():
    spec = registry.resolve(f"{EXAMPLE}:SPEC")
    inputs = spec.make_inputs({"M": 8, "N": 64}, "float16", 1, "cpu")
    out = references.bind("torch", spec, inputs)()
    assert out.shape == (8, 64)
    assert references.default_for(spec) == "torch"
