"""CloudWatch's control plane: alarms (PutMetricAlarm, DescribeAlarms, DescribeAlarmHistory,
DeleteAlarms, SetAlarmState) evaluated locally against the stored metrics, and dashboards (PutDashboard,
GetDashboard, ListDashboards, DeleteDashboards) stored as given.

`evaluate(now)` is what CloudWatch does once a period: for each alarm on one metric, the statistic of
each of its last `EvaluationPeriods` complete periods is compared with the threshold; `DatapointsToAlarm`
breaching ones make ALARM, otherwise OK, and TreatMissingData decides what a period without data counts
as (`missing`: left out, and all missing is INSUFFICIENT_DATA; `notBreaching`, `breaching`; `ignore`:
the state stays). Every change of state is a history item with its reason. Alarm actions (SNS) are
recorded, not sent: nothing leaves the machine. Alarms on metric math are stored and described, and stay
INSUFFICIENT_DATA with a reason that says the emulator does not evaluate them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from emulator.services.cloudwatch.errors import invalid, missing, no_alarm, no_dashboard
from emulator.services.cloudwatch.runtime import Metrics
from emulator.services.cloudwatch.shapes import COMPARISONS, AlarmDefinition, alarm_definition, text
from emulator.wire.awsjson import Operation

STATES = ("OK", "ALARM", "INSUFFICIENT_DATA")
HISTORY = 100  # items kept per alarm
REASON_VALUES = (
    10  # the newest datapoints a state change's reason lists (its StateReason holds 1,023 characters)
)
MAX_DASHBOARD_BYTES = 1_000_000  # CloudWatch's limit on a dashboard body


@dataclass
class Alarm:
    definition: AlarmDefinition
    arn: str
    state: str = "INSUFFICIENT_DATA"
    reason: str = "Unchecked: Initial alarm creation"
    updated: float = field(default_factory=time.time)
    configuration_updated: float = field(default_factory=time.time)
    history: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=HISTORY))

    def to_json(self) -> dict[str, Any]:
        request = self.definition.request
        kept = {k: v for k, v in request.items() if k not in ("Tags", "AlarmName")}
        return {
            **kept,
            "AlarmName": self.definition.name,
            "AlarmArn": self.arn,
            "StateValue": self.state,
            "StateReason": self.reason,
            "StateUpdatedTimestamp": self.updated,
            "AlarmConfigurationUpdatedTimestamp": self.configuration_updated,
            "ActionsEnabled": request.get("ActionsEnabled", True),
            "DatapointsToAlarm": self.definition.datapoints_to_alarm,
            "TreatMissingData": self.definition.treat_missing,
        }


class CloudWatchControl:
    def __init__(self, metrics: Metrics, region: str, account_id: str, clock: Any = time.time) -> None:
        self.metrics = metrics
        self.region = region
        self.account_id = account_id
        self._clock = clock
        self.alarms: dict[str, Alarm] = {}
        self.dashboards: dict[str, tuple[str, float]] = {}

    def operations(self) -> dict[str, Operation]:
        names = (
            "PutMetricAlarm",
            "DescribeAlarms",
            "DescribeAlarmHistory",
            "DeleteAlarms",
            "SetAlarmState",
            "PutDashboard",
            "GetDashboard",
            "ListDashboards",
            "DeleteDashboards",
        )
        return {name: getattr(self, name) for name in names}

    # alarms -------------------------------------------------------------------------------------

    def PutMetricAlarm(self, body: dict[str, Any]) -> dict[str, Any]:
        definition = alarm_definition(body)
        existing = self.alarms.get(definition.name)
        if existing is not None:
            existing.definition = definition
            existing.configuration_updated = self._clock()
        else:
            arn = f"arn:aws:cloudwatch:{self.region}:{self.account_id}:alarm:{definition.name}"
            alarm = self.alarms[definition.name] = Alarm(definition, arn, updated=self._clock())
            if definition.metric is None:
                alarm.reason = "The emulator does not evaluate metric math alarms"
            self._record(alarm, "ConfigurationUpdate", f"Alarm {definition.name} created")
        return {}

    def DescribeAlarms(self, body: dict[str, Any]) -> dict[str, Any]:
        names = body.get("AlarmNames")
        prefix = body.get("AlarmNamePrefix")
        state = body.get("StateValue")
        if state is not None and state not in STATES:
            raise invalid(f"StateValue must be one of {', '.join(STATES)}.")
        chosen = [
            alarm.to_json()
            for name, alarm in sorted(self.alarms.items())
            if (not names or name in names)
            and (prefix is None or name.startswith(prefix))
            and state in (None, alarm.state)
        ]
        types = body.get("AlarmTypes") or ["MetricAlarm"]
        return {"MetricAlarms": chosen if "MetricAlarm" in types else [], "CompositeAlarms": []}

    def DescribeAlarmHistory(self, body: dict[str, Any]) -> dict[str, Any]:
        name = body.get("AlarmName")
        kind = body.get("HistoryItemType")
        items = [
            item
            for alarm in self.alarms.values()
            if name in (None, alarm.definition.name)
            for item in alarm.history
            if kind in (None, item["HistoryItemType"])
        ]
        items.sort(key=lambda item: item["Timestamp"], reverse=body.get("ScanBy") != "TimestampAscending")
        return {"AlarmHistoryItems": items}

    def DeleteAlarms(self, body: dict[str, Any]) -> dict[str, Any]:
        names = body.get("AlarmNames")
        if not isinstance(names, list):
            raise missing("AlarmNames")
        unknown = [name for name in names if name not in self.alarms]
        if unknown:
            raise no_alarm(unknown[0])
        for name in names:
            del self.alarms[name]
        return {}

    def SetAlarmState(self, body: dict[str, Any]) -> dict[str, Any]:
        name = text(body, "AlarmName")
        state = text(body, "StateValue")
        if state not in STATES:
            raise invalid(f"StateValue must be one of {', '.join(STATES)}.")
        alarm = self.alarms.get(name)  # type: ignore[arg-type]
        if alarm is None:
            raise no_alarm(name)  # type: ignore[arg-type]
        self._change(alarm, state, text(body, "StateReason", limit=1023))  # type: ignore[arg-type]
        return {}

    def evaluate(self, now: float | None = None) -> None:
        """Every alarm on one metric, over its last complete periods at `now`."""
        now = self._clock() if now is None else now
        for alarm in list(self.alarms.values()):
            if alarm.definition.metric is not None:
                self._evaluate(alarm, now)

    def _evaluate(self, alarm: Alarm, now: float) -> None:
        """One alarm, its periods as arrays: at most 86,400 of them (AWS's rule on Period x
        EvaluationPeriods, shapes.alarm_definition), read with one range query."""
        definition = alarm.definition
        length, count = definition.period, definition.evaluation_periods
        end = (now // length) * length
        start = end - count * length
        read = self.metrics.periods(definition.metric, start, end, length, definition.stat)  # type: ignore[arg-type]
        found = np.full(count, np.nan)
        found[((read.starts - start) // length).astype(np.int64)] = read.column(definition.stat)  # type: ignore[arg-type]
        present = ~np.isnan(found)
        with np.errstate(invalid="ignore"):
            breaching = int((COMPARISONS[definition.comparison](found, definition.threshold) & present).sum())
        verdicts = int(present.sum())
        if definition.treat_missing in ("breaching", "notBreaching"):
            breaching += (count - verdicts) if definition.treat_missing == "breaching" else 0
            verdicts = count
        if not verdicts:
            if definition.treat_missing != "ignore":
                self._change(alarm, "INSUFFICIENT_DATA", f"no datapoints in the last {count} period(s)")
            return
        state = "ALARM" if breaching >= definition.datapoints_to_alarm else "OK"
        if state == alarm.state:
            return
        values = found[present]
        shown = ", ".join(f"{v:g}" for v in values[-REASON_VALUES:].tolist()) or "none"
        self._change(
            alarm,
            state,
            f"Threshold Crossed: {breaching} out of the last {count} datapoints "
            f"[{'..., ' if len(values) > REASON_VALUES else ''}{shown}] "
            f"{'were' if state == 'ALARM' else 'were not'} {definition.comparison} "
            f"the threshold ({definition.threshold:g}) (minimum {definition.datapoints_to_alarm} "
            f"datapoint(s) for {state} -> {'OK' if state == 'ALARM' else 'ALARM'} transition).",
        )

    async def run(self, interval_s: float) -> None:
        while True:
            self.evaluate()
            await asyncio.sleep(interval_s)

    def _change(self, alarm: Alarm, state: str, reason: str) -> None:
        if state == alarm.state:
            return
        old, alarm.state, alarm.reason, alarm.updated = alarm.state, state, reason, self._clock()
        self._record(alarm, "StateUpdate", f"Alarm updated from {old} to {state}", reason=reason)

    def _record(self, alarm: Alarm, kind: str, summary: str, **data: Any) -> None:
        alarm.history.append(
            {
                "AlarmName": alarm.definition.name,
                "AlarmType": "MetricAlarm",
                "Timestamp": self._clock(),
                "HistoryItemType": kind,
                "HistorySummary": summary,
                "HistoryData": json.dumps({"newState": {"stateValue": alarm.state, **data}}),
            }
        )

    # dashboards ---------------------------------------------------------------------------------

    def PutDashboard(self, body: dict[str, Any]) -> dict[str, Any]:
        name = text(body, "DashboardName")
        dashboard = text(body, "DashboardBody", limit=MAX_DASHBOARD_BYTES)
        try:
            parsed = json.loads(dashboard)  # type: ignore[arg-type]
        except (ValueError, RecursionError) as exc:  # a body nested 100,000 deep: the parser's recursion
            raise invalid(f"The dashboard body is not JSON: {exc}") from exc
        if not isinstance(parsed, dict) or not isinstance(parsed.get("widgets", []), list):
            raise invalid("The dashboard body is an object with a list of widgets.")
        self.dashboards[name] = (dashboard, self._clock())  # type: ignore[index]
        return {"DashboardValidationMessages": []}

    def GetDashboard(self, body: dict[str, Any]) -> dict[str, Any]:
        name = text(body, "DashboardName")
        if name not in self.dashboards:
            raise no_dashboard(name)  # type: ignore[arg-type]
        return {
            "DashboardArn": self._dashboard_arn(name),
            "DashboardBody": self.dashboards[name][0],
            "DashboardName": name,
        }  # type: ignore[index,arg-type]

    def ListDashboards(self, body: dict[str, Any]) -> dict[str, Any]:
        prefix = body.get("DashboardNamePrefix") or ""
        return {
            "DashboardEntries": [
                {
                    "DashboardName": name,
                    "DashboardArn": self._dashboard_arn(name),
                    "LastModified": modified,
                    "Size": len(dashboard.encode()),
                }
                for name, (dashboard, modified) in sorted(self.dashboards.items())
                if name.startswith(prefix)
            ]
        }

    def DeleteDashboards(self, body: dict[str, Any]) -> dict[str, Any]:
        names = body.get("DashboardNames")
        if not isinstance(names, list) or not names:
            raise missing("DashboardNames")
        for name in names:
            if name not in self.dashboards:
                raise no_dashboard(name)
        for name in names:
            del self.dashboards[name]
        return {}

    def _dashboard_arn(self, name: str) -> str:
        return f"arn:aws:cloudwatch::{self.account_id}:dashboard/{name}"
