"""Bedrock's record of the model requests it answered, for tests and benchmarks to read: served by the
operator's routes at `GET /_emulator/bedrock/requests` (emulator/admin/routes.py; not an AWS API, under the
operator prefix, so unsigned).

Each entry is a Converse/ConverseStream request as the model saw it (`model_id`, `messages`, `system`,
`inference_config`), when it arrived and when its reply ended (`started`, `ended`: wall-clock seconds,
`time.time()`, so a client on the same machine can compare them with its own; `ended` is null while the
reply streams) and how many deltas the model made (`output_tokens`). The latest LIMIT are kept, oldest
first: enough for a test's conversation, bounded for an emulator that runs for days.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

from emulator.llm.base import ConverseRequest

LIMIT = 256


class RequestLog:
    def __init__(self, limit: int = LIMIT) -> None:
        self._entries: deque[dict[str, Any]] = deque(maxlen=limit)

    def start(self, request: ConverseRequest) -> dict[str, Any]:
        """Record `request` as arriving now; the entry returned is what `end` completes."""
        entry = {
            "model_id": request.model_id,
            "messages": list(request.messages),
            "system": list(request.system),
            "inference_config": dict(request.inference_config),
            "started": time.time(),
            "ended": None,
            "output_tokens": 0,
        }
        self._entries.append(entry)
        return entry

    @staticmethod
    def end(entry: dict[str, Any], output_tokens: int) -> None:
        entry["ended"] = time.time()
        entry["output_tokens"] = output_tokens

    async def follow(
        self, entry: dict[str, Any], events: AsyncIterator[bytes], output_tokens: Callable[[], int]
    ) -> AsyncIterator[bytes]:
        """Pass a reply's `events` through and end `entry` when the reply ends: sent in full, failed,
        or closed early because its client went away (as Strands' cancel does)."""
        try:
            async with contextlib.aclosing(events) as stream:  # type: ignore[type-var]
                async for event in stream:
                    yield event
        finally:
            self.end(entry, output_tokens())

    def entries(self) -> list[dict[str, Any]]:
        return list(self._entries)
