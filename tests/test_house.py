"""The house rules, read from the source: which room may import which, and no import cycles.

Every arrow counts: imports at any depth of a file, `if TYPE_CHECKING:` imports (a type-only circle is
still a circle a reader has to untangle) and `importlib.import_module("...")` loads.

Rooms: `facts` (the product's shared facts) is below them all and may be imported by every room but
the emulator; `host_guard` (the Host names a local server answers) by the two servers a browser
reaches, `agent` and `gateway`; `container_kit` (what every model container is built from) imports only
itself; `tts` and `stt` (the containers) depend on it and on nothing else of ours, never on each other,
and every image that copies one copies the kit; `agent` on `tts.wire.sse` and `tts.text.speech_text`
alone (its image carries just those files); `emulator`, an AWS emulator anyone could point at their own
containers, runs `tts` and `agent` as processes and imports nothing of ours but itself (not `facts`
either: the product's names reach it only through the manifests and the stacks); `gateway` (OpenAI's
audio routes over SageMaker, the caller's side) imports none of the containers it fronts; `deploy` reads
`agent.config` and no more of the agent; the development tools sit on top: `tools` (the client tools:
demo, listener, client session loop, ASR judge, fidelity) may use the shipped packages, `local_stack`
those and `tools`, `benchmarks` those and `local_stack`. Shipped packages import no test or development
tool, and their images carry none (`COPY` lines: tests/test_house_images.py).
Inside `container_kit`, `tts`, `emulator` and `deploy`, layers point down only (`LAYERS`), and rooms on
one floor that must stay apart (`APART`) never import each other. Each shared fact is defined in
`facts.py` alone (tests/test_house_facts.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import REPO

SHARED = ("facts",)
WEB = ("host_guard",)
"""The Host names a local server answers (DNS rebinding): shared by the two servers a browser reaches."""
SHIPPED = ("container_kit", "tts", "stt", "emulator", "agent", "deploy", "gateway")
DEV_TOOLS = ("tools", "local_stack", "benchmarks")
TOOLS = (*DEV_TOOLS, "tests")
DEV_ONLY = ("pytest", "hypothesis", "testcontainers", "matplotlib", "playwright", "faster_whisper", "moto")
# What a shipped room runs that is a development tool for the others: the stt container's model.
SHIPPED_USES = {"stt": ("faster_whisper",)}

ALLOWED = {
    "facts": (),
    "host_guard": (),
    "container_kit": ("container_kit",),
    "tts": ("tts", "container_kit", *SHARED),
    "stt": ("stt", "container_kit", *SHARED),
    "agent": ("agent", "tts.wire.sse", "tts.text.speech_text", *WEB, *SHARED),
    "emulator": ("emulator",),
    "deploy": ("deploy", "agent.config", *SHARED),
    "gateway": ("gateway", *WEB, *SHARED),
    "tools": ("tools", *SHIPPED, *SHARED),
    "local_stack": ("local_stack", "tools", *SHIPPED, *SHARED),
    "benchmarks": ("benchmarks", "local_stack", "tools", *SHIPPED, *SHARED),
}

# Each room's floors, lowest first; a module not named is on the top floor of its package.
LAYERS = {
    "container_kit": {
        "container_kit.errors": 0,
        "container_kit.settings": 0,
        "container_kit.body": 1,
        "container_kit.messages": 1,
        "container_kit.container": 1,
        "container_kit.command": 1,
        "container_kit.routes": 2,
        "container_kit.app": 3,
    },
    "tts": {
        "tts.config": 0,
        "tts.text": 1,
        "tts.voices": 1,
        "tts.wire": 2,
        "tts.engines.base": 2,
        "tts.engines.decode": 2,
        "tts.engines.weights": 2,
        "tts.engines.cpu_quota": 2,
        "tts.engines.onnx": 3,
        "tts.engines.torch": 3,
        "tts.engines": 4,  # the factory, the one module that imports both engines
        "tts.scheduling": 5,
        "tts.serving": 6,
    },
    "stt": {
        "stt.config": 0,
        "stt.wire": 1,
        "stt.engines": 2,
        "stt.turns": 2,
        "stt.serving": 3,
    },
    "emulator": {
        "emulator.config": 0,
        "emulator.processes": 0,
        "emulator.wire": 1,
        "emulator.manifest": 1,  # the resources to create at start-up, read and checked: config below it
        "emulator.controller": 2,
        "emulator.llm.base": 2,
        "emulator.llm.threads": 2,  # the models' thread budget and priority: the factory and SmolLM2 use it
        "emulator.llm.script": 3,
        "emulator.llm.openai_compatible": 3,
        "emulator.llm.smollm": 3,
        "emulator.llm": 4,  # the factory, the one module that imports the reply models
        "emulator.services": 5,
        "emulator.admin": 6,  # the operator's routes, over the services' state
        "emulator.images": 6,  # CloudFormation's image assets built: over its ImageAsset
        "emulator.server": 7,  # the app and the running emulator: the services, the operator's routes wired
        "emulator.cli": 8,  # a detached emulator found through its record, and what it answers printed
        "emulator.__main__": 9,  # the command line, the way in
    },
    "deploy": {
        "deploy.errors": 0,
        "deploy.aws": 0,
        "deploy.status": 0,
        "deploy.product": 0,
        "deploy.bedrock": 1,
        "deploy.gpu": 1,
        "deploy.capacity": 1,
        "deploy.images": 1,
        "deploy.waiters": 1,
        "deploy.dashboard": 1,
        "deploy.config": 2,
        "deploy.manifests": 2,
        "deploy.model_dir": 3,
        "deploy.stacks": 3,
        "deploy.parts": 4,  # the package and its interface (parts/base.py)
        "deploy.prereqs": 5,
        "deploy.teardown": 5,
        "deploy.app": 5,
        "deploy.toolkit": 5,
        "deploy.cdk_toolkit": 6,
        "deploy.parts.endpoint": 6,
        "deploy.parts.agent_runtime": 6,
        "deploy.local_toolkit": 7,
        "deploy.orchestrate": 8,
        "deploy.flags": 8,
    },
}
TOP = 9
SERVICES = REPO / "emulator" / "services"
SERVICE_NAMES = tuple(sorted(p.name for p in SERVICES.iterdir() if (p / "__init__.py").is_file()))
APART = (
    tuple(f"emulator.services.{name}" for name in SERVICE_NAMES),
    ("emulator.llm.script", "emulator.llm.openai_compatible", "emulator.llm.smollm"),
    ("tts.engines.onnx", "tts.engines.torch"),
    ("tts.wire", "tts.engines"),
    ("stt.engines", "stt.turns"),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    found = {}
    for name in (*SHARED, *WEB):
        found[name] = REPO / f"{name}.py"
    for room in (*SHIPPED, *DEV_TOOLS):
        for path in sorted((REPO / room).rglob("*.py")):
            found[module_name(path)] = path
    return found


def loaded_by_name(node: ast.Call) -> str | None:
    """The module an `importlib.import_module(...)` call names: a literal, or an f-string's fixed prefix
    (`f"benchmarks.{name}"` loads something in `benchmarks`)."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called != "import_module" or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return str(arg.values[0].value).rstrip(".")
    return None


def imports(path: Path) -> Iterator[str]:
    """Every module `path` imports, at any depth of the file, type-only and by `importlib` included."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
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
        elif isinstance(node, ast.Call) and (name := loaded_by_name(node)):
            yield name


def ours(name: str) -> bool:
    return name.split(".")[0] in (*SHARED, *WEB, *SHIPPED, *TOOLS)


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def layer(name: str) -> int:
    """The floor of `name` in its package: the longest matching prefix in LAYERS decides."""
    floors = LAYERS.get(name.split(".")[0], {})
    matches = [prefix for prefix in floors if within(name, (prefix,))]
    return floors[max(matches, key=len)] if matches else TOP


GRAPH = {name: sorted({i for i in imports(path) if ours(i)}) for name, path in modules().items()}


@pytest.mark.parametrize("room", [*SHARED, *WEB, *SHIPPED, *DEV_TOOLS])
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
        if within(name, (*SHARED, *WEB, *SHIPPED))
        for target in imports(path)
        if within(target, (*DEV_ONLY, *TOOLS))
        and not within(target, SHIPPED_USES.get(name.split(".")[0], ()))
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_layers_point_down_and_rooms_stay_apart(package: str):
    wrong = []
    for name, targets in GRAPH.items():
        if not within(name, (package,)):
            continue
        for target in targets:
            if not within(target, (package,)) or target == package:
                continue
            if layer(target) > layer(name):
                wrong.append(f"{name} (floor {layer(name)}) imports {target} (floor {layer(target)})")
            for rooms in APART:
                mine = next((r for r in rooms if within(name, (r,))), None)
                theirs = next((r for r in rooms if within(target, (r,))), None)
                if mine and theirs and mine != theirs:
                    wrong.append(f"{name} imports a room it must stay apart from: {target}")
    assert not wrong, "\n".join(wrong)


def test_the_house_test_sees_type_only_and_importlib_arrows(tmp_path: Path, monkeypatch):
    """The blind spots of the first house test: a cycle made of `TYPE_CHECKING` imports, and a module
    loaded by name, are arrows too."""
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    (tmp_path / "tts").mkdir()
    (tmp_path / "tts" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tts.b import B\n"
    )
    (tmp_path / "tts" / "b.py").write_text('import importlib\nimportlib.import_module("tts.a")\n')
    assert list(imports(tmp_path / "tts" / "a.py")) == ["typing", "typing.TYPE_CHECKING", "tts.b", "tts.b.B"]
    assert list(imports(tmp_path / "tts" / "b.py")) == ["importlib", "tts.a"]


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


# The files of an emulated service, by role (emulator/services/__init__.py), and their floors inside it:
# the errors at the bottom, the request shapes on them, the operations, the routes on top.
SERVICE_ROLES = {
    "errors": 0,
    "shapes": 1,
    "request_log": 1,
    "series": 1,
    "control": 2,
    "runtime": 2,
    "bidirectional": 2,
    "template": 1,
    "resources": 2,
    "provisioning": 2,
    "routes": 3,
}
REQUIRED_ROLES = ("routes", "errors")


@pytest.mark.parametrize("service", SERVICE_NAMES)
def test_every_service_has_its_routes_and_errors_and_only_role_files(service: str):
    folder = SERVICES / service
    files = {path.stem for path in folder.glob("*.py") if path.name != "__init__.py"}
    assert not {p.name for p in folder.iterdir() if p.is_dir() and p.name != "__pycache__"}, "no subfolders"
    assert set(REQUIRED_ROLES) <= files, f"{service} lacks {sorted(set(REQUIRED_ROLES) - files)}"
    assert files <= set(SERVICE_ROLES), f"{service}: not a role: {sorted(files - set(SERVICE_ROLES))}"
    assert ast.get_docstring(ast.parse((folder / "__init__.py").read_text())), f"{service} says what it is"
    assert [
        n for n in ast.parse((folder / "__init__.py").read_text()).body if not isinstance(n, ast.Expr)
    ] == []


def test_the_roles_are_the_ones_the_services_package_names():
    doc = ast.get_docstring(ast.parse((SERVICES / "__init__.py").read_text())) or ""
    assert all(f"`{role}.py`" in doc for role in SERVICE_ROLES), (
        "emulator/services/__init__.py names each role"
    )


@pytest.mark.parametrize("service", SERVICE_NAMES)
def test_a_service_imports_no_other_service_and_its_roles_point_down(service: str):
    prefix = f"emulator.services.{service}"
    wrong = []
    for name, targets in GRAPH.items():
        if not within(name, (prefix,)) or name == prefix:
            continue
        role = name.rsplit(".", 1)[1]
        for target in targets:
            if within(target, ("emulator.services",)) and not within(target, (prefix,)):
                wrong.append(f"{name} imports another service: {target}")
            elif within(target, (prefix,)) and target != prefix:
                theirs = target.removeprefix(prefix + ".").split(".")[0]
                if SERVICE_ROLES.get(theirs, 0) > SERVICE_ROLES[role] or (
                    theirs == "routes" and role != "routes"
                ):
                    wrong.append(f"{name} ({role}) imports {target} ({theirs}), a role above it")
    assert not wrong, "\n".join(wrong)


ROUTE_DECORATORS = {"route", "get", "post", "put", "delete", "patch", "websocket"}


@pytest.mark.parametrize("service", SERVICE_NAMES)
def test_every_path_a_service_serves_is_declared_in_its_routes(service: str):
    """Only `routes.py` makes a blueprint or declares a path; the other role files hand it plain
    operations or async views by operation name."""
    wrong = []
    for path in sorted((SERVICES / service).glob("*.py")):
        if path.name == "routes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in {"Blueprint", "add_url_rule"} or (
                    called in ROUTE_DECORATORS
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and str(node.args[0].value).startswith("/")
                ):
                    wrong.append(f"{path.relative_to(REPO)}:{node.lineno} {called}(...)")
    assert not wrong, "\n".join(wrong)


def test_the_llm_room_has_no_wire():
    """The reply models refuse with their own typed exceptions (PromptTooLong), which the Bedrock
    service maps to Bedrock's errors: emulator.llm imports no wire code and no service."""
    wrong = [
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if within(name, ("emulator.llm",))
        for target in targets
        if within(target, ("emulator.wire", "emulator.services", "emulator.controller"))
    ]
    assert not wrong, "\n".join(wrong)
