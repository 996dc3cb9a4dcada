"""A service's data-plane routes declared as data (`View`: method, path, operation) in its `routes.py`
and bound to the async views its `runtime.py` (or `bidirectional.py`) returns by operation name, with
errors in the service's envelope: so every path a service serves is read in its routes.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from quart import Blueprint, Response

from emulator.wire.awserrors import AwsError, render_errors

Handler = Callable[..., Any]
"""An async Quart view: the path's variables as keyword arguments, a Response back."""


WEBSOCKET = "WEBSOCKET"
"""A View's method for a WebSocket route (its handler accepts, or answers HTTP before accepting)."""


@dataclass(frozen=True)
class View:
    method: str
    """An HTTP method, or WEBSOCKET."""
    path: str
    """Quart's rule, e.g. `/endpoints/<name>/invocations`."""
    operation: str
    """The AWS operation the path serves: the key of its handler."""


def views_blueprint(
    name: str,
    views: Sequence[View],
    handlers: Mapping[str, Handler],
    render: Callable[[AwsError], Response],
) -> Blueprint:
    """One blueprint serving `views` with their handlers; an AwsError is answered with `render`."""
    bp = Blueprint(name, __name__)
    render_errors(bp, render)
    for view in views:
        if view.method == WEBSOCKET:
            bp.add_websocket(view.path, view.operation, handlers[view.operation])
        else:
            bp.add_url_rule(view.path, view.operation, handlers[view.operation], methods=[view.method])
    return bp
