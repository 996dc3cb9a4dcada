"""The README's ways in keep working: the tox environments it names (each one's tests at least collect),
and uv's lock of pyproject.toml.

tox and uv come with the `test` extra (and so with scripts/bootstrap and `uv sync`)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support.paths import REPO

README_TOX_ENVS = {"unit", "integration", "reliability", "lint", "gpu", "cdk"}
PYTEST_TOX_ENVS = ("unit", "integration", "reliability", "cdk", "gpu", "gpu-image", "arm64-image")


def run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False)


def test_tox_has_every_environment_the_readme_names() -> None:
    listed = run([sys.executable, "-m", "tox", "list", "--no-desc"], timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert set(listed.stdout.split()) >= README_TOX_ENVS
    shown = run(
        [sys.executable, "-m", "tox", "config", "-e", "integration", "-k", "commands", "runner"], timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    # the GPU image and the arm64 agent: tox -e gpu-image, tox -e arm64-image
    assert "pytest -m 'integration and not gpu_image and not arm64_image'" in shown.stdout
    assert "uv-venv" in shown.stdout, "tox-uv makes the environments (packages linked from uv's cache)"


@pytest.mark.timeout(300)
def test_tox_lint_runs(tmp_path: Path) -> None:
    """A real tox run: it builds its own environment (ruff from the index) and lints the tree."""
    result = run([sys.executable, "-m", "tox", "--workdir", str(tmp_path), "-e", "lint"], timeout=280)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "lint: OK" in result.stdout


@pytest.mark.timeout(120)
def test_uv_lock_matches_pyproject() -> None:
    uv = shutil.which(
        "uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )
    if uv is None:
        pytest.skip("uv is not installed")
    result = run([uv, "lock", "--check", "--offline"], timeout=110)
    assert result.returncode == 0, f"uv.lock is stale: run `uv lock`\n{result.stderr[-2000:]}"


def tox_config(envs: tuple[str, ...], keys: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """`tox config` for `envs`: env -> key -> value (a multi-line value joined by spaces)."""
    shown = run([sys.executable, "-m", "tox", "config", "-e", ",".join(envs), "-k", *keys], timeout=60)
    assert shown.returncode == 0, shown.stderr
    config: dict[str, dict[str, str]] = {}
    env = key = ""
    for line in shown.stdout.splitlines():
        if section := re.fullmatch(r"\[testenv:(.+)\]", line):
            env = section[1]
            config[env] = {}
        elif (pair := re.fullmatch(r"(\w+) = ?(.*)", line)) and env:
            key = pair[1]
            config[env][key] = pair[2]
        elif line.startswith("  ") and env and key:
            config[env][key] = f"{config[env][key]} {line.strip()}".strip()
    return config


def extras_closure(names: set[str]) -> set[str]:
    """The extras `names` install, following pyproject's `voice-agent-aws[...]` self-references."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    found: set[str] = set()
    pending = list(names)
    while pending:
        if (name := pending.pop()) in found:
            continue
        found.add(name)
        for requirement in extras[name]:
            if inner := re.fullmatch(r"voice-agent-aws\[(.+)\]", requirement):
                pending.extend(part.strip() for part in inner[1].split(","))
    return found


def test_every_pytest_env_installs_what_every_test_module_imports() -> None:
    """pytest imports every test module before -m deselects any, so an env that runs pytest over tests/
    needs every extra a test module imports (the developer set, `dev`), or the whole run fails at
    collection (tests/deploy imports aws-cdk-lib: the `cdk` extra)."""
    configs = tox_config(PYTEST_TOX_ENVS, ("extras",))
    needed = extras_closure({"dev"}) - {"dev"}  # what `dev` brings, however an env spells it
    for env in PYTEST_TOX_ENVS:
        installed = extras_closure(set(configs[env]["extras"].split()))
        assert installed >= needed, f"tox env {env} lacks the extras {sorted(needed - installed)}"


# Every env's collection in one interpreter: the test modules and what they import (torch, the
# model packages) load once, not once per env (seven processes took 86-109 s on 2 cores; one, ~20 s).
COLLECT_EACH = """
import json, sys
import pytest
exits = {}
for env, args in json.loads(sys.argv[1]).items():
    print(f"=== tox -e {env}", flush=True)
    exits[env] = int(pytest.main([*args, "--collect-only", "-q", "-p", "no:cacheprovider"]))
print("EXITS " + json.dumps(exits))
"""


# slow: seven collections of the whole tree (18 s); a change that breaks collection fails every run.
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_pytest_env_selection_collects() -> None:
    """Each tox env's own pytest command, collect-only, in this environment (which has what every env
    installs: the test above): no collection error (pytest's exit 2), and at least one test selected
    (exit 0, not 5)."""
    configs = tox_config(PYTEST_TOX_ENVS, ("commands",))
    selections = {}
    for env in PYTEST_TOX_ENVS:
        argv = shlex.split(configs[env]["commands"])
        assert argv[0] == "pytest", f"tox env {env} runs {argv[0]}, not pytest"
        selections[env] = argv[1:]
    collected = run([sys.executable, "-c", COLLECT_EACH, json.dumps(selections)], timeout=600)
    output = collected.stdout + collected.stderr
    assert collected.returncode == 0 and "EXITS " in collected.stdout, output[-5000:]
    exits = json.loads(collected.stdout.rsplit("EXITS ", 1)[1])
    for env, code in exits.items():
        section = output.split(f"=== tox -e {env}\n", 1)[1].split("=== tox -e ", 1)[0]
        assert code == 0, (
            f"tox -e {env}: `pytest {shlex.join(selections[env])}` does not collect:\n{section[-3000:]}"
        )
