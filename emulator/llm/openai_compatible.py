"""A real model behind any OpenAI-compatible `/v1/chat/completions` server (llama.cpp's server, vLLM,
Ollama), streamed as it generates."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from emulator.llm.base import ConverseRequest, ReplyModelError, openai_messages


class OpenAICompatibleModel:
    """Streams a reply from an OpenAI-compatible chat completions server.

    `base_url` is what the OpenAI SDK takes (e.g. `http://127.0.0.1:8080/v1`); a URL without a path
    gets `/v1`. Without `model`, the first model listed by `GET /v1/models` is used (llama.cpp and
    Ollama serve one; vLLM needs the exact name).
    """

    def __init__(
        self, base_url: str, model: str | None = None, api_key: str | None = None, timeout_s: float = 120.0
    ) -> None:
        url = httpx.URL(base_url)
        if url.scheme not in {"http", "https"} or not url.host:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        self.base_url = str(url.copy_with(path=url.path.rstrip("/") or "/v1")).rstrip("/")
        self.model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = httpx.Timeout(timeout_s, connect=10.0)

    async def stream(self, request: ConverseRequest) -> AsyncIterator[str]:
        async with httpx.AsyncClient(headers=self._headers, timeout=self._timeout) as client:
            model = self.model or await self._first_model(client)
            body = {"model": model, "messages": openai_messages(request), "stream": True}
            body.update(_sampling(request.inference_config))
            try:
                async with client.stream("POST", f"{self.base_url}/chat/completions", json=body) as response:
                    if response.status_code >= 400:
                        detail = (await response.aread()).decode(errors="replace")[:500]
                        raise ReplyModelError(
                            f"the model server answered {response.status_code}: {detail}",
                            response.status_code,
                        )
                    async for line in response.aiter_lines():
                        if (delta := _parse_sse_line(line)) is _DONE:
                            return
                        if delta:
                            yield delta
            except httpx.HTTPError as exc:
                raise ReplyModelError(f"the model server at {self.base_url} failed: {exc!r}") from exc

    async def _first_model(self, client: httpx.AsyncClient) -> str:
        try:
            response = await client.get(f"{self.base_url}/models")
            response.raise_for_status()
            return str(response.json()["data"][0]["id"])
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise ReplyModelError(
                f"no model configured and none listed by {self.base_url}/models: {exc!r}"
            ) from exc


_DONE = object()


def _parse_sse_line(line: str) -> str | object | None:
    """One SSE line of a chat completions stream -> its text delta, `_DONE`, or None."""
    if not line.startswith("data:"):
        return None
    data = line[5:].strip()
    if data == "[DONE]":
        return _DONE
    try:
        chunk = json.loads(data)
    except json.JSONDecodeError as exc:
        raise ReplyModelError(f"the model server sent a malformed chunk: {data[:200]!r}") from exc
    if not isinstance(chunk, dict):
        raise ReplyModelError(f"the model server sent a malformed chunk: {data[:200]!r}")
    if "error" in chunk:
        raise ReplyModelError(f"the model server reported an error: {chunk['error']!r}")
    choices = chunk.get("choices") or [{}]
    content = (choices[0].get("delta") or {}).get("content")
    return content if isinstance(content, str) else None


def _sampling(config: Mapping[str, Any]) -> dict[str, Any]:
    mapping = {
        "maxTokens": "max_tokens",
        "temperature": "temperature",
        "topP": "top_p",
        "stopSequences": "stop",
    }
    return {openai: config[bedrock] for bedrock, openai in mapping.items() if bedrock in config}
