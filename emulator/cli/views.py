"""What `python -m emulator status`, `logs`, `metrics` and `traces` print from what a running emulator's
operator routes answer (emulator/admin/). The status: tables of endpoints, agent runtimes, recorded
autoscaling, CloudFormation stacks, the latest value of each metric of the dashboards CloudWatch holds,
failure reasons, replicas and recent events; a replica that reports its load shows it as LOAD,
`sessions playing/sessions it keeps gap-free`, marked SATURATED when the first is over the second (new
sessions then wait longer for first audio). The logs: the end of every replica's log (endpoints' and
agent runtimes' alike). The traces: each as a timeline."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def _age(seconds: float | None) -> str:
    if not seconds:
        return "-"
    seconds = max(0, int(time.time() - seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def printable(text: str) -> str:
    """`text` as one line of visible characters: a control character (a terminal escape, a newline in
    a name a client chose) is shown escaped, so no stored value can clear the screen or forge a row."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def _table(rows: list[list[Any]]) -> str:
    rows = [[printable(str(cell)) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def _load(load: dict[str, Any] | None) -> str:
    if not load:
        return "-"
    text = f"{load.get('sessions')}/{load.get('capacity') or '?'}"
    if load.get("waiting"):
        text += f" +{load['waiting']} waiting"
    calibration = load.get("calibration")
    if calibration:  # the replica's measured speed (tts/scheduling/calibration.py), ms per decoded frame
        text += f" ({calibration.get('decode_frame_ms')} ms/frame)"
    return f"{text} SATURATED" if load.get("saturated") else text


def _replica_row(r: dict[str, Any], owner: str) -> list[str]:
    return [
        r["id"],
        owner,
        r["variant"],
        r["deployment"],
        r["phase"],
        "yes" if r["ready"] else "no",
        str(r["restarts"]),
        str(r["sessions"]),
        _load(r.get("load")),
        str(r["port"] or "-"),
        r["ident"] or "-",
        _age(r["started"]),
    ]


REPLICA_COLUMNS = [
    "REPLICA",
    "ENDPOINT",
    "VARIANT",
    "ROLE",
    "PHASE",
    "READY",
    "RESTARTS",
    "SESSIONS",
    "LOAD",
    "PORT",
    "PROCESS",
    "AGE",
]


def _section(rows: list[list[Any]], title: str | None = None) -> list[str]:
    """A table after a blank line (under `title`), or nothing when it has only its header."""
    if len(rows) < 2:
        return []
    return ["", *([title] if title else []), _table(rows)]


def _endpoints(status: dict[str, Any], replicas: list[list[str]]) -> str:
    endpoints = [["ENDPOINT", "STATUS", "CONFIG", "VARIANTS", "READY", "AGE"]]
    for ep in status["endpoints"]:
        variants = ",".join(f"{v['name']}({v['instance_type']})" for v in ep["variants"]) or "-"
        ready = sum(v["ready"] for v in ep["variants"])
        desired = sum(v["desired"] for v in ep["variants"])
        endpoints.append(
            [ep["name"], ep["status"], ep["config"], variants, f"{ready}/{desired}", _age(ep["created"])]
        )
        replicas += [_replica_row(r, ep["name"]) for r in ep["replicas"]]
    return _table(endpoints)


def _runtimes(status: dict[str, Any], replicas: list[list[str]]) -> list[list[str]]:
    runtimes = [["AGENT RUNTIME", "STATUS", "VERSION", "PLATFORM", "ENDPOINTS", "ARN", "AGE"]]
    for rt in status.get("agent_runtimes", []):
        endpoints_of = ",".join(rt["endpoints"])
        platform = rt.get("platform") or "-"  # local commands: no image to tell
        row = [rt["name"], rt["status"], str(rt["version"]), platform, endpoints_of, rt["arn"]]
        runtimes.append([*row, _age(rt["created"])])
        replicas += [_replica_row(r, rt["name"]) for r in rt["replicas"]]
    return runtimes


def _scaling(status: dict[str, Any]) -> list[list[str]]:
    scaling = [["AUTOSCALING (recorded, not applied)", "MIN", "MAX", "POLICY", "METRIC", "TARGET"]]
    for target in status.get("autoscaling", []):
        for policy in target["policies"] or [{"name": "-", "metric": "-", "target": "-"}]:
            scaling.append(
                [
                    target["resource"],
                    str(target["min"]),
                    str(target["max"]),
                    policy["name"],
                    str(policy["metric"]),
                    str(policy["target"]),
                ]
            )
    return scaling


def _stacks(status: dict[str, Any]) -> list[list[str]]:
    stacks = [["STACK", "STATUS", "RESOURCES", "AGE", "REASON"]]
    for stack in status.get("stacks", []):
        row = [stack["name"], stack["status"], str(stack["resources"]), _age(stack["created"])]
        stacks.append([*row, stack["reason"] or "-"])
    return stacks


def _dashboards(status: dict[str, Any]) -> list[str]:
    """Each dashboard CloudWatch holds (emulator/admin/dashboards.py): its metrics' latest values."""
    out = []
    for dashboard in status.get("dashboards", []):
        rows = [["WIDGET", "METRIC", "STAT", "PERIOD", "LATEST"]]
        for widget in dashboard["widgets"]:
            for metric in widget["metrics"]:
                if "unread" in metric:
                    rows.append([widget["title"], metric["label"], "-", "-", f"unread: {metric['unread']}"])
                    continue
                value = metric["value"]
                latest = "-" if value is None else f"{value:.4g}"
                rows.append(
                    [widget["title"], metric["label"], metric["stat"], f"{metric['period_s']} s", latest]
                )
        out += _section(rows, f"DASHBOARD {printable(dashboard['name'])} (each metric over its last period)")
    return out


def format_status(status: dict[str, Any]) -> str:
    info = status["emulator"]
    out = [
        f"emulator pid {info.get('pid')}  {info.get('http_url')}  {info.get('h2_url')}  "
        f"runtime {info.get('runtime')}",
        f"response streams split: {info.get('rechunk', '-')}",
        "",
    ]
    replicas = [REPLICA_COLUMNS]
    out.append(_endpoints(status, replicas))
    out += _section(_runtimes(status, replicas))
    out += _section(_scaling(status))
    out += _section(_stacks(status))
    out += _dashboards(status)
    failures = [
        printable(f"  {item['name']}: {item['failure_reason']}")
        for item in [*status["endpoints"], *status.get("agent_runtimes", [])]
        if item.get("failure_reason")
    ]
    if failures:
        out += ["", "FAILURE REASONS", *failures]
    out += _section(replicas)
    events = [["AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"]]
    events += [
        [_age(e["time"]), e["type"], e["reason"], e["object"], e["message"]] for e in status["events"][-15:]
    ]
    out += _section(events, "EVENTS")
    return "\n".join(out)


def format_metrics(rows: list[dict[str, Any]], window_s: float) -> str:
    """`python -m emulator metrics`: one row per metric with data in the window. Whatever a row holds
    is printed as text: an emulator that stored a `Unit` of 5 made this view die with a traceback."""
    if not rows:
        return f"no metrics in the last {window_s:g} s"
    table = [["NAMESPACE", "METRIC", "DIMENSIONS", "COUNT", "AVERAGE", "P50", "P90", "P99", "MAX", "UNIT"]]
    for row in rows:
        dims = ",".join(f"{d.get('Name')}={d.get('Value')}" for d in row.get("Dimensions") or []) or "-"
        numbers = [row.get(s) for s in ("SampleCount", "Average", "p50", "p90", "p99", "Maximum")]
        shown = [f"{n:.4g}" if isinstance(n, int | float) else "-" for n in numbers]
        table.append([row.get("Namespace"), row.get("MetricName"), dims, *shown, row.get("Unit")])
    return f"the last {window_s:g} s\n" + _table(table)


def replicas(status: dict[str, Any]) -> list[dict[str, Any]]:
    """Every replica: the endpoints', then the agent runtimes' (the order of the status table)."""
    owners = [*status["endpoints"], *status.get("agent_runtimes", [])]
    return [replica for owner in owners for replica in owner["replicas"]]


def format_logs(chosen: list[dict[str, Any]], tail: int) -> str:
    """The last `tail` lines of each replica's log (process or container output), under a header."""
    blocks = []
    for replica in chosen:
        try:
            lines = Path(replica["log"]).read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        header = f"==> {replica['id']} ({replica['ident'] or 'not running'}) {replica['log']} <=="
        blocks.append(header + "\n" + "\n".join(lines[-tail:]))
    return "\n".join(blocks)


def timeline(trace: dict[str, Any], width: int = 50) -> str:
    """One trace as text: each span's offset, duration and a bar on the trace's time axis."""
    spans = trace["spans"]
    total = max((s["start_ms"] + s["duration_ms"] for s in spans), default=0.0) or 1.0
    depth = {s["span_id"]: 0 for s in spans}
    lines = [f"trace {trace['trace_id']} ({spans[0]['service'] if spans else '-'}), {total:.0f} ms"]
    for s in spans:
        depth[s["span_id"]] = depth.get(s["parent_id"], -1) + 1
        begin = int(s["start_ms"] / total * width)
        length = max(1, int(s["duration_ms"] / total * width))
        bar = " " * begin + "#" * min(length, width - begin)
        name = "  " * depth[s["span_id"]] + s["name"]
        lines.append(f"  {name:<28} {s['start_ms']:>8.1f} ms {s['duration_ms']:>8.1f} ms  |{bar:<{width}}|")
    return "\n".join(lines)
