"""Text the model cannot take, sent to the emulated Bedrock: refused up front with the 400
`ValidationException` the real service gives, before the model sees it.

A lone surrogate (the JSON escape `\\ud800` with no low half) used to reach the local model, whose
tokenizer failed on it: a 424 `ModelErrorException` from Converse and a `modelStreamErrorException`
event from ConverseStream. The model here encodes its prompt the way a tokenizer does, so it fails
the same way if a string gets through.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import SimpleNamespace

import pytest
from quart import Quart

from emulator.llm.base import ConverseRequest, ReplyModelError
from emulator.services.bedrock import routes as bedrock_routes
from tests.reliability.emulator_support import BEDROCK_MODEL_ID

pytestmark = pytest.mark.reliability


class EncodingModel:
    """Encodes every text of the request as UTF-8 (as a tokenizer does), then answers `ok`."""

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: ConverseRequest) -> AsyncIterator[str]:
        self.calls += 1
        texts = [b.get("text", "") for m in request.messages for b in m["content"]]
        try:
            for text in texts + [b.get("text", "") for b in request.system]:
                text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ReplyModelError(f"the tokenizer failed: {exc}") from exc
        yield "ok"


def app_with(model: EncodingModel) -> Quart:
    app = Quart(__name__)
    (blueprint,) = bedrock_routes.blueprints(
        SimpleNamespace(llm_backend="script", bedrock_model_ids=()), model=model
    )
    app.register_blueprint(blueprint)
    return app


USER_OK = b'{"role": "user", "content": [{"text": "Hello."}]}'
HOSTILE = {
    "text": b'{"messages": [{"role": "user", "content": [{"text": "Say \\ud800 this."}]}]}',
    "low half alone": b'{"messages": [{"role": "user", "content": [{"text": "\\udc00"}]}]}',
    "system": b'{"messages": [' + USER_OK + b'], "system": [{"text": "Be \\udbff brief."}]}',
    "later turn": b'{"messages": ['
    + USER_OK
    + b', {"role": "assistant", "content": [{"text": "Hi \\ud83d"}]}, '
    + USER_OK
    + b"]}",
    "object key": b'{"messages": [' + USER_OK + b'], "additionalModelRequestFields": {"\\ud800": 1}}',
}


@pytest.mark.parametrize("operation", ["converse", "converse-stream"])
@pytest.mark.parametrize("body", HOSTILE.values(), ids=HOSTILE.keys())
async def test_a_lone_surrogate_is_a_validation_exception_before_the_model(
    operation: str, body: bytes
) -> None:
    model = EncodingModel()
    response = await app_with(model).test_client().post(f"/model/{BEDROCK_MODEL_ID}/{operation}", data=body)
    assert response.status_code == 400, await response.get_data()
    assert response.headers["x-amzn-errortype"] == "ValidationException"
    assert "not valid Unicode" in (await response.get_json())["message"]
    assert model.calls == 0, "the model must never see a string it cannot encode"


@pytest.mark.parametrize("operation", ["converse", "converse-stream"])
async def test_a_surrogate_pair_is_valid_text(operation: str) -> None:
    """The escape of an emoji (a high and a low half together) is ordinary text, not an error."""
    model = EncodingModel()
    body = b'{"messages": [{"role": "user", "content": [{"text": "Nice \\ud83d\\ude00"}]}]}'
    response = await app_with(model).test_client().post(f"/model/{BEDROCK_MODEL_ID}/{operation}", data=body)
    assert response.status_code == 200
    assert b"ok" in await response.get_data()
    assert model.calls == 1
