"""Bedrock Runtime's routes: `POST /model/<id>/converse` and `.../converse-stream` (restJson1, the
answer as Bedrock's JSON or event stream), errors in Bedrock's envelope (errors.py)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint

from emulator.llm.base import ReplyModel
from emulator.services.bedrock.request_log import RequestLog
from emulator.services.bedrock.runtime import runtime_blueprint


def blueprints(config: Any, requests: RequestLog, *, model: ReplyModel) -> list[Blueprint]:
    """`model` is the app's (`Services.reply_model`), which the app preloads itself."""
    return [runtime_blueprint(config, model, preload=False, requests=requests)]
