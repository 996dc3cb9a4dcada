"""An AgentCore SDK app that notes when its client goes away: `POST /invocations` with
`{"mark": PATH}` streams one SSE event every 50 ms for a minute, and writes PATH the moment its
response is torn down before the end (the agent's side of a client disconnect).

`python tests/reliability/marking_agent.py --port P`
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvicorn
from bedrock_agentcore.runtime import BedrockAgentCoreApp
from starlette.responses import StreamingResponse

app = BedrockAgentCoreApp()


@app.entrypoint
async def invoke(payload: Any, context: Any) -> StreamingResponse:
    mark = Path(payload["mark"])

    async def events() -> AsyncIterator[bytes]:
        complete = False
        try:
            for index in range(1200):
                yield f'data: {{"index": {index}}}\n\n'.encode()
                await asyncio.sleep(0.05)
            complete = True
        finally:
            if not complete:
                mark.write_text("abandoned")  # noqa: ASYNC240 (a few bytes, at once: no await in a teardown)

    return StreamingResponse(events(), media_type="text/event-stream")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8080)
    uvicorn.run(app, host="127.0.0.1", port=parser.parse_args().port, log_level="warning")
