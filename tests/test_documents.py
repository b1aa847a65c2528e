"""profiler/documents.py: TOML and JSON documents read with one-line errors; caches read as {}
when missing or damaged."""

import pytest

from kernelscope.errors import UserError
from kernelscope.profiler.documents import read_json_or_empty, read_toml


@pytest.mark.parametrize("content,says", [
    (None, "no such rule file"),
    ("folder", "is a folder, not a rule file"),
    (b"a = = 1", "not valid TOML"),
    (b"a = '\xe9'\n", "cannot read the rule file"),     # Latin-1, not UTF-8
])
def test_read_toml_names_the_file_and_the_problem(tmp_path, content, says):
    path = tmp_path / "rules.toml"
    if content == "folder":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(UserError) as info:
        read_toml(path, "rule file")
    assert str(info.value).startswith(f"{path}: {says}")
    assert "\n" not in str(info.value)


def test_read_toml_returns_the_document(tmp_path):
    (tmp_path / "ok.toml").write_text("[[rule]]\nid = 'x'\n")
    assert read_toml(tmp_path / "ok.toml", "rule file") == {"rule": [{"id": "x"}]}


@pytest.mark.parametrize("content,expected", [
    (None, {}),                      # never written
    ('{"a": 1', {}),                 # cut short
    ("[1, 2]", {}),                  # not an object
    ('{"a": 1}', {"a": 1}),
])
def test_read_json_or_empty(tmp_path, content, expected):
    path = tmp_path / "cache.json"
    if content is not None:
        path.write_text(content)
    assert read_json_or_empty(path) == expected
