"""STS GetCallerIdentity: who am I.

The deploy commands confirm credentials with it before `status` and `destroy`; with it they run
unchanged against the emulator. The identity is the emulator's account; any credentials pass unless
SigV4 keys are configured.
"""

from __future__ import annotations

from typing import Any

from emulator.config import EmulatorConfig
from emulator.wire.awsjson import Operation


class StsControl:
    def __init__(self, config: EmulatorConfig) -> None:
        self.config = config

    def operations(self) -> dict[str, Operation]:
        return {"GetCallerIdentity": self.GetCallerIdentity}

    def GetCallerIdentity(self, body: dict[str, Any]) -> dict[str, Any]:
        account = self.config.account_id
        return {
            "Arn": f"arn:aws:iam::{account}:user/emulator",
            "UserId": f"AIDAEMULATOR{account}",
            "Account": account,
        }
