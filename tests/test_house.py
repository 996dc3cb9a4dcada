"""The house rules, read from the source: which room may import which, and no import cycles.

Rooms: `tts` (the container) depends on nothing else of ours; `agent` on `tts.sse` alone (its image
carries just that file); `emulator` runs `tts` and `agent` as processes and imports neither; `deploy`
reads `agent.config`; the development tools (`local_stack`, `benchmarks`) sit on top. Inside the
emulator: config <- wire <- controller <- faces (sagemaker, bedrock, agentcore; no face imports another)
<- the app, server and command line. Shipped packages import no test or development tool.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import REPO

SHIPPED = ("tts", "emulator", "agent", "deploy")
TOOLS = ("local_stack", "benchmarks", "tests")
DEV_ONLY = ("pytest", "hypothesis", "testcontainers", "matplotlib", "playwright", "faster_whisper", "moto")

ALLOWED = {
    "tts": ("tts",),
    "agent": ("agent", "tts.sse"),
    "emulator": ("emulator",),
    "deploy": ("deploy", "agent", "tts"),
}
EMULATOR_LAYERS = {
    "emulator.config": 0,
    "emulator.wire": 1,
    "emulator.controller": 2,
    "emulator.sagemaker": 3,
    "emulator.bedrock": 3,
    "emulator.agentcore": 3,
}
EMULATOR_TOP = 4  # app, server, cli, manifest, admin, record, ...
FACES = ("emulator.sagemaker", "emulator.bedrock", "emulator.agentcore")


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    found = {}
    for room in (*SHIPPED, "local_stack", "benchmarks"):
        for path in sorted((REPO / room).rglob("*.py")):
            found[module_name(path)] = path
    return found


def imports(path: Path) -> Iterator[str]:
    """Every module `path` imports, at any depth of the file (function-level imports count too)."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {  # `if TYPE_CHECKING:` imports are for the type checker, not arrows at run time
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for inner in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                ).strip(".")
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def ours(name: str) -> bool:
    return name.split(".")[0] in (*SHIPPED, *TOOLS)


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def layer(name: str) -> int:
    for prefix, rank in EMULATOR_LAYERS.items():
        if within(name, (prefix,)):
            return rank
    return EMULATOR_TOP


GRAPH = {name: sorted({i for i in imports(path) if ours(i)}) for name, path in modules().items()}


@pytest.mark.parametrize("room", SHIPPED)
def test_each_room_imports_only_what_it_may(room: str):
    wrong = [
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if within(name, (room,))
        for target in targets
        if not within(target, ALLOWED[room])
    ]
    assert not wrong, "\n".join(wrong)


def test_shipped_packages_import_no_development_tool():
    wrong = [
        f"{name} imports {target}"
        for name, path in modules().items()
        if within(name, SHIPPED)
        for target in imports(path)
        if within(target, (*DEV_ONLY, *TOOLS))
    ]
    assert not wrong, "\n".join(wrong)


def test_emulator_layers_point_down_and_faces_stay_apart():
    wrong = []
    for name, targets in GRAPH.items():
        if not within(name, ("emulator",)):
            continue
        for target in targets:
            if not within(target, ("emulator",)) or target == "emulator":
                continue
            if layer(target) > layer(name):
                wrong.append(f"{name} (layer {layer(name)}) imports {target} (layer {layer(target)})")
            face = next((f for f in FACES if within(name, (f,))), None)
            other = next((f for f in FACES if within(target, (f,))), None)
            if face and other and face != other:
                wrong.append(f"face {name} imports another face: {target}")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles():
    known = set(GRAPH)

    def resolve(target: str) -> str | None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target or None

    edges = {name: {t for t in map(resolve, targets) if t and t != name} for name, targets in GRAPH.items()}
    # a package's __init__ is imported by each of its modules: not an arrow back up
    edges = {n: {t for t in ts if not n.startswith(t + ".")} for n, ts in edges.items()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)
