"""The reply backends behind the emulator's Bedrock Runtime face.

A `ReplyModel` turns one Converse request into a stream of text deltas; the Bedrock face wraps them
in the Bedrock wire format. Three backends:

- `SmolLM2Model` (emulator/bedrock/smollm.py, the default): SmolLM2-135M-Instruct on transformers + torch on
  the CPU, a real model that answers the question asked, streaming its tokens as it decodes them;
  concurrent requests take turns token by token.

- `PacedScriptModel`: a scripted stand-in for a hosted model. Deterministic reply text, streamed
  token by token after a first-token latency and at a token rate like a hosted model's, so latency
  comparisons (bidi vs batch) are repeatable without a GPU or an account.
- `OpenAICompatibleModel`: a real local model behind any OpenAI-compatible
  `/v1/chat/completions` server (llama.cpp server, vLLM, Ollama), streamed as it generates.

All answer in text only: a request's `toolConfig` is accepted and ignored (no tool calls), which is
enough for a voice agent that has no tools and keeps Strands' tool-enabled requests working.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx
import yaml

from emulator.config import ConfigError

DEFAULT_REPLY = (
    "Thanks for waiting, I found your order. It shipped yesterday from our Denver warehouse and should "
    "arrive on Thursday. If you need it sooner, I can upgrade the shipping at no cost. Would you like "
    "me to do that now?"
)

# A token is a run of up to 8 word characters or one other character, with its leading whitespace:
# close to what a BPE tokenizer does to English ("order." -> " order", ".").
_TOKEN = re.compile(r"\s*(?:\w{1,8}|[^\w\s])")


class ModelBackendError(RuntimeError):
    """The model behind the face failed (unreachable, HTTP error, malformed stream)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ConverseRequest:
    """The parts of a Bedrock Converse/ConverseStream request a reply backend needs."""

    model_id: str
    messages: Sequence[Mapping[str, Any]]
    system: Sequence[Mapping[str, Any]] = ()
    inference_config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def prompt(self) -> str:
        """The text of the latest user message that has text (what a script matches against)."""
        for message in reversed(self.messages):
            if message.get("role") == "user" and (text := _blocks_text(message.get("content", []))):
                return text
        return ""


class ReplyModel(Protocol):
    def stream(self, request: ConverseRequest) -> AsyncIterator[str]:
        """Yield the reply as text deltas, as they are produced.

        The Bedrock face calls this in its request handler, before it answers: a backend that cannot
        take the request (a prompt longer than its context) raises an `AwsError` here, and the client
        gets that error (400 ValidationException) instead of a stream."""
        ...


def tokenize(text: str) -> list[str]:
    """Split text into token-sized pieces that join back to the stripped text."""
    return _TOKEN.findall(text.strip())


def load_script(path: str | Path) -> str | dict[str, str]:
    """Read a reply script file (YAML or JSON): one reply string, or a prompt substring -> reply mapping."""
    try:
        data = yaml.safe_load(Path(path).expanduser().read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read the LLM script {path}: {exc}") from exc
    try:
        _script_pairs(data)
    except ValueError as exc:
        raise ConfigError(f"the LLM script {path}: {exc}") from exc
    return data


def _script_pairs(script: str | Mapping[str, str] | None) -> list[tuple[str, str]]:
    if script is None:
        return []
    if isinstance(script, str):
        script = {"": script}
    if not isinstance(script, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in script.items()
    ):
        raise ValueError("a script is a non-empty reply string or a mapping of prompt substring -> reply")
    return list(script.items())


class PacedScriptModel:
    """Deterministic replies streamed at a hosted model's pace (first-token latency, tokens per second).

    `script` is one reply for every prompt, or a mapping of prompt substring -> reply: the first
    substring (in order) found in the prompt, case-insensitively, picks the reply; an empty substring
    matches every prompt. Without a script or a match the reply is `DEFAULT_REPLY`, a four-sentence
    answer.
    """

    def __init__(
        self,
        first_token_ms: float = 400,
        tokens_per_s: float = 60.0,
        script: str | Mapping[str, str] | None = None,
    ) -> None:
        if not first_token_ms >= 0 or math.isinf(first_token_ms):
            raise ValueError(f"first_token_ms must be a finite number >= 0, got {first_token_ms!r}")
        if not tokens_per_s > 0:
            raise ValueError(f"tokens_per_s must be > 0, got {tokens_per_s!r}")
        self.first_token_ms = first_token_ms
        self.tokens_per_s = tokens_per_s
        self.script = _script_pairs(script)

    def reply_for(self, request: ConverseRequest) -> str:
        prompt = request.prompt.lower()
        for needle, reply in self.script:
            if needle.lower() in prompt:
                return reply
        return DEFAULT_REPLY

    async def stream(self, request: ConverseRequest) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        first_due = loop.time() + self.first_token_ms / 1000
        for index, token in enumerate(tokenize(self.reply_for(request))):
            # Due times come from one clock so sleep overshoot does not accumulate.
            delay = first_due + index / self.tokens_per_s - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            yield token


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
                        raise ModelBackendError(
                            f"the model server answered {response.status_code}: {detail}",
                            response.status_code,
                        )
                    async for line in response.aiter_lines():
                        if (delta := _parse_sse_line(line)) is _DONE:
                            return
                        if delta:
                            yield delta
            except httpx.HTTPError as exc:
                raise ModelBackendError(f"the model server at {self.base_url} failed: {exc!r}") from exc

    async def _first_model(self, client: httpx.AsyncClient) -> str:
        try:
            response = await client.get(f"{self.base_url}/models")
            response.raise_for_status()
            return str(response.json()["data"][0]["id"])
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise ModelBackendError(
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
        raise ModelBackendError(f"the model server sent a malformed chunk: {data[:200]!r}") from exc
    if not isinstance(chunk, dict):
        raise ModelBackendError(f"the model server sent a malformed chunk: {data[:200]!r}")
    if "error" in chunk:
        raise ModelBackendError(f"the model server reported an error: {chunk['error']!r}")
    choices = chunk.get("choices") or [{}]
    content = (choices[0].get("delta") or {}).get("content")
    return content if isinstance(content, str) else None


def _blocks_text(blocks: Any) -> str:
    """The text of Bedrock content blocks (text, and the text inside tool results)."""
    parts: list[str] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif isinstance(result := block.get("toolResult"), dict):
            parts.append(_blocks_text(result.get("content", [])))
    return "\n".join(p for p in parts if p)


def openai_messages(request: ConverseRequest) -> list[dict[str, str]]:
    """Bedrock system + messages -> OpenAI chat messages with plain string content.

    Plain strings, not content-part lists: llama.cpp's chat templates fail on list content.
    Images, documents and tool-use blocks have no text and are left out.
    """
    messages: list[dict[str, str]] = []
    if system := "\n".join(b["text"] for b in request.system if isinstance(b.get("text"), str)):
        messages.append({"role": "system", "content": system})
    for message in request.messages:
        messages.append({"role": str(message["role"]), "content": _blocks_text(message.get("content", []))})
    return messages


def _sampling(config: Mapping[str, Any]) -> dict[str, Any]:
    mapping = {
        "maxTokens": "max_tokens",
        "temperature": "temperature",
        "topP": "top_p",
        "stopSequences": "stop",
    }
    return {openai: config[bedrock] for bedrock, openai in mapping.items() if bedrock in config}
