"""Bedrock Runtime's routes: `POST /model/<id>/converse` and `.../converse-stream` (restJson1, the
answer as Bedrock's JSON or event stream), errors in Bedrock's envelope (errors.py)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint

from emulator.llm import reply_model_from_config
from emulator.llm.base import ReplyModel
from emulator.services.bedrock.errors import bedrock_error
from emulator.services.bedrock.request_log import RequestLog
from emulator.services.bedrock.runtime import runtime_handlers
from emulator.services.bedrock.shapes import KnownModels
from emulator.wire.views import View, views_blueprint

VIEWS = (
    View("POST", "/model/<path:model_id>/converse-stream", "ConverseStream"),
    View("POST", "/model/<path:model_id>/converse", "Converse"),
)


def blueprints(
    config: Any, requests: RequestLog | None = None, *, model: ReplyModel | None = None
) -> list[Blueprint]:
    """Bedrock Runtime's routes; `config` needs the `llm_*` and `bedrock_model_ids` fields of
    `EmulatorConfig`.

    `model` is the app's (`Services.reply_model`, which the app preloads itself); without one, the
    model the config names. `requests` records every request (a log of its own when none is given).
    """
    model = model or reply_model_from_config(config)
    log = requests if requests is not None else RequestLog()
    handlers = runtime_handlers(model, log, KnownModels(tuple(config.bedrock_model_ids)))
    return [views_blueprint("bedrock", VIEWS, handlers, bedrock_error)]
