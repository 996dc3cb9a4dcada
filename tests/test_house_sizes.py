"""House rule, read from the source: no module over 400 lines, no function over 60 (a nested function
counts on its own and inside the one that holds it; a route table is data, and a route handler a named
function of its own). Checked in every room of ours, `deploy` too since its stacks' constructors were cut
into named parts (`ObservabilityStack.__init__` was 145 lines)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tests.test_house import DEV_TOOLS, SHARED, SHIPPED, WEB, module_name

SIZED = (*SHARED, *WEB, *SHIPPED, *DEV_TOOLS)
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def sources(room: str) -> list[Path]:
    single = REPO / f"{room}.py"
    return [single] if single.is_file() else sorted((REPO / room).rglob("*.py"))


@pytest.mark.parametrize("room", SIZED)
def test_every_module_and_function_is_short_enough_to_read(room: str) -> None:
    wrong = []
    for path in sources(room):
        text = path.read_text()
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            wrong.append(f"{module_name(path)}: {lines} lines")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    wrong.append(f"{module_name(path)}.{node.name} (line {node.lineno}): {length} lines")
    assert not wrong, "\n".join(wrong)
