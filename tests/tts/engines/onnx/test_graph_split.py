"""The split graphs' cache: keyed on the source model and on the code that rewrites it, so a change to
`graph_split.py` or `conv_matmul.py` rebuilds the graphs instead of running the old ones (a warm cache
once passed a test on a broken rewrite)."""

import json
from pathlib import Path

import pytest

from tts.engines.onnx import graph_split
from tts.engines.onnx.graph_split import REWRITE_SOURCES, SplitModel, rewrite_fingerprint, split_model


@pytest.fixture
def builds(monkeypatch) -> list[Path]:
    """`_build` replaced by one that writes placeholder graphs and records which source it split."""
    built: list[Path] = []

    def build(source: Path, split: SplitModel) -> None:
        built.append(source)
        for path in split.paths:
            path.write_bytes(f"{path.name} of {source.read_bytes()!r}".encode())

    monkeypatch.setattr(graph_split, "_build", build)
    return built


@pytest.fixture
def rewrite_code(monkeypatch, tmp_path) -> Path:
    """A stand-in for the rewriting code, as the fingerprint's only source."""
    code = tmp_path / "conv_matmul.py"
    code.write_text("def convolutions_as_matmul(model): ...\n")
    monkeypatch.setattr(graph_split, "REWRITE_SOURCES", (code,))
    return code


def test_the_fingerprint_covers_the_code_that_writes_the_graphs():
    assert {path.name for path in REWRITE_SOURCES} == {"graph_split.py", "conv_matmul.py"}
    assert all(path.is_file() for path in REWRITE_SOURCES)


def test_an_unchanged_fingerprint_reuses_the_cache(builds, rewrite_code, tmp_path):
    source = tmp_path / "model.onnx"
    source.write_bytes(b"model")
    first = split_model(source, tmp_path / "cache")
    assert split_model(source, tmp_path / "cache") == first
    assert builds == [source], "the second call must reuse the graphs"
    manifest = json.loads((first.text_path.parent / "manifest.json").read_text())
    assert manifest["code_sha256"] == rewrite_fingerprint()


def test_a_change_to_the_rewriting_code_rebuilds_the_graphs(builds, rewrite_code, tmp_path):
    source = tmp_path / "model.onnx"
    source.write_bytes(b"model")
    before = split_model(source, tmp_path / "cache")
    fingerprint = rewrite_fingerprint()
    rewrite_code.write_text("def convolutions_as_matmul(model): return 0\n")
    assert rewrite_fingerprint() != fingerprint
    after = split_model(source, tmp_path / "cache")
    assert len(builds) == 2, "changed code must rebuild the graphs"
    assert after.text_path.parent != before.text_path.parent
    assert split_model(source, tmp_path / "cache") == after and len(builds) == 2


def test_another_model_or_a_corrupt_graph_rebuilds(builds, rewrite_code, tmp_path):
    source = tmp_path / "model.onnx"
    source.write_bytes(b"model")
    split = split_model(source, tmp_path / "cache")
    split.decoder_path.write_bytes(b"truncated")
    split_model(source, tmp_path / "cache")
    assert len(builds) == 2, "a graph that no longer matches its manifest must be rebuilt"
    source.write_bytes(b"another model")
    assert split_model(source, tmp_path / "cache").text_path.parent != split.text_path.parent
    assert len(builds) == 3
