"""What `python -m emulator status`, `logs` and `metrics` print."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_status_says_how_response_streams_are_split() -> None:
    from emulator.cli.views import format_status

    info = {
        "pid": 1,
        "http_url": "u",
        "h2_url": "h",
        "runtime": "process",
        "rechunk": "off (one part per container write)",
    }
    out = format_status({"emulator": info, "endpoints": [], "events": []})
    assert "response streams split: off (one part per container write)" in out


def test_status_shows_each_agent_runtimes_platform() -> None:
    """What its image is built for (AgentCore runs arm64), a stand-in said as one; `-` for local commands."""
    from emulator.cli.views import format_status

    def runtime(name: str, platform: str | None) -> dict[str, Any]:
        arn = f"arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/{name}-abcdefghij"
        return {
            "name": name,
            "status": "READY",
            "version": 1,
            "platform": platform,
            "endpoints": ["DEFAULT"],
        } | {
            "arn": arn,
            "created": 0.0,
            "replicas": [],
        }

    info = {"pid": 1, "http_url": "u", "h2_url": "h", "runtime": "docker", "rechunk": "on"}
    runtimes = [
        runtime("arm", "linux/arm64"),
        runtime("standin", "linux/amd64 for linux/arm64"),
        runtime("proc", None),
    ]
    out = format_status({"emulator": info, "endpoints": [], "agent_runtimes": runtimes, "events": []})
    rows = {
        line.split()[0]: line
        for line in out.splitlines()
        if line.split()[:1] in (["arm"], ["standin"], ["proc"])
    }
    assert rows["arm"].split()[3] == "linux/arm64"
    assert "linux/amd64 for linux/arm64" in rows["standin"]
    assert rows["proc"].split()[3] == "-"
    assert "PLATFORM" in out


def test_logs_cover_the_replicas_of_endpoints_and_agent_runtimes(tmp_path: Path) -> None:
    from emulator.cli.views import format_logs, replicas

    def replica(name: str) -> dict[str, Any]:
        log = tmp_path / f"{name}.log"
        log.write_text("".join(f"{name} line {i}\n" for i in range(10)))
        return {"id": name, "ident": f"pid {len(name)}", "log": str(log)}

    status = {
        "endpoints": [{"name": "tts", "replicas": [replica("tts-a"), replica("tts-b")]}],
        "agent_runtimes": [{"name": "agent", "replicas": [replica("agent-v1")]}],
    }
    every = replicas(status)
    assert [r["id"] for r in every] == ["tts-a", "tts-b", "agent-v1"]
    out = format_logs(every, 2).splitlines()
    assert out[6] == f"==> agent-v1 (pid 8) {tmp_path / 'agent-v1.log'} <=="
    assert out[7:] == ["agent-v1 line 8", "agent-v1 line 9"]


def test_status_shows_each_replicas_load_and_saturation() -> None:
    from emulator.cli.views import format_status

    def replica(name: str, load: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "id": name,
            "variant": "AllTraffic",
            "deployment": "current",
            "phase": "Running",
            "ready": True,
            "restarts": 0,
            "sessions": 4,
            "port": 8080,
            "ident": "pid 1",
            "started": None,
            "load": load,
        }

    endpoint = {
        "name": "tts",
        "status": "InService",
        "config": "tts",
        "created": None,
        "variants": [],
        "replicas": [
            replica("tts-a", {"sessions": 4, "capacity": 3, "saturated": True}),
            replica(
                "tts-b",
                {
                    "sessions": 2,
                    "capacity": 3,
                    "saturated": False,
                    "waiting": 1,
                    "calibration": {"decode_frame_ms": 3.8},
                },
            ),
            replica("tts-c", None),
        ],
    }
    info = {"pid": 1, "http_url": "u", "h2_url": "h", "runtime": "process"}
    rows = {
        line.split()[0]: line
        for line in format_status({"emulator": info, "endpoints": [endpoint], "events": []}).splitlines()
        if line.strip()
    }
    assert "LOAD" in rows["REPLICA"]
    assert "4/3 SATURATED" in rows["tts-a"]
    assert "2/3 +1 waiting (3.8 ms/frame)" in rows["tts-b"] and "SATURATED" not in rows["tts-b"]
    assert "SATURATED" not in rows["tts-c"]


def test_status_shows_a_stored_name_with_control_characters_escaped_on_one_line() -> None:
    from emulator.cli.views import format_status

    info = {"pid": 1, "http_url": "u", "h2_url": "h", "runtime": "process"}
    forged = "p\x1b[2J\x1b[H\nFORGED  row"
    target = {"resource": "endpoint/e/variant/v", "min": 1, "max": 2}
    target["policies"] = [{"name": forged, "metric": "m", "target": 3.0}]
    failing = {
        "name": "e",
        "status": "Failed",
        "config": "c",
        "variants": [],
        "created": None,
        "replicas": [],
    }
    failing["failure_reason"] = "bad\x1b]0;title\x07"
    out = format_status({"emulator": info, "endpoints": [failing], "events": [], "autoscaling": [target]})
    assert "\x1b" not in out and "\x07" not in out
    assert not any(line.startswith("FORGED") for line in out.splitlines())
    assert "p\\x1b[2J\\x1b[H\\nFORGED  row" in out


def test_metrics_print_whatever_an_emulator_stored() -> None:
    """An older emulator stored a `Unit` of 5 (and nothing stops a row from lacking a number): the view
    prints it instead of dying with a traceback."""
    rows: list[dict[str, Any]] = [
        {
            "Namespace": "N",
            "MetricName": "u",
            "Dimensions": [{"Name": "Service", "Value": "tts"}],
            "Unit": 5,
            "SampleCount": 1.0,
            "Average": "NaN",
            "p50": None,
            "p90": 1,
            "p99": 1.5,
            "Maximum": 2.0,
        },
        {"Namespace": "N", "MetricName": "bare", "Dimensions": []},
    ]
    from emulator.cli.views import format_metrics

    printed = format_metrics(rows, 600).splitlines()
    assert printed[2].split() == ["N", "u", "Service=tts", "1", "-", "-", "1", "1.5", "2", "5"]
    assert printed[3].split() == ["N", "bare", "-", "-", "-", "-", "-", "-", "-", "None"]
