"""STS through its routes, in process: botocore's own serializer and parser on either side of the one
awsQuery binding (emulator/wire/awsquery.py), so what boto3 sends is what the operation gets."""

from __future__ import annotations

import botocore.session
from botocore.parsers import QueryParser
from botocore.serialize import QuerySerializer
from quart import Quart

from emulator.config import EmulatorConfig
from emulator.services.sts.control import StsControl
from emulator.services.sts.routes import PATH, blueprints

OPERATIONS = botocore.session.get_session().get_service_model("sts")


def app() -> Quart:
    served = Quart("sts-test")
    for blueprint in blueprints(StsControl(EmulatorConfig(account_id="111122223333"))):
        served.register_blueprint(blueprint)
    return served


async def call(operation: str) -> tuple[int, dict]:
    model = OPERATIONS.operation_model(operation)
    form = QuerySerializer().serialize_to_request({}, model)["body"]
    response = await app().test_client().post(PATH, form=form)
    body = await response.get_data()
    parsed = QueryParser().parse(
        {"body": body, "headers": dict(response.headers), "status_code": response.status_code},
        model.output_shape,
    )
    return response.status_code, parsed


async def test_get_caller_identity_is_the_emulators_account():
    status, parsed = await call("GetCallerIdentity")
    assert status == 200
    assert parsed["Account"] == "111122223333"
    assert parsed["Arn"] == "arn:aws:iam::111122223333:user/emulator"


async def test_an_action_sts_does_not_serve_is_invalid_action():
    status, parsed = await call("AssumeRole")
    assert status == 400
    assert parsed["Error"]["Code"] == "InvalidAction" and "AssumeRole" in parsed["Error"]["Message"]
