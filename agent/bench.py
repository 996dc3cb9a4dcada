"""`python -m agent.bench`: bidi vs batch time to first audio on the local stack, N runs per mode,
with the paced script model (400 ms to first token, 60 tokens/s by default), once on loopback and once
with the emulator's injected network latency on the SageMaker hop. Prints a table, writes JSON.

Each condition starts a fresh stack (emulator + real Kokoro container + agent), warms it with one
untimed turn, then alternates the two modes run by run so machine noise hits both alike.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
from pathlib import Path

from agent.demo import DEFAULT_PROMPT, MODES, compare
from agent.local import local_stack
from emulator.config import EmulatorConfig
from emulator.stats import summarize


def run_condition(
    name: str, emulator: EmulatorConfig, runs: int, prompt: str, agent_env: dict[str, str] | None = None
) -> dict:
    with local_stack(emulator, agent_env=agent_env) as stack:
        compare(stack.agent_url, prompt, runs=1)  # warm-up: connections, first-call lazy imports
        summary = compare(stack.agent_url, prompt, runs=runs)
    result: dict = {"condition": name}
    for mode in MODES:
        ttfa = [r["ttfa_ms"] for r in summary[mode]["runs"]]
        result[mode] = {
            "ttfa_ms": summarize(ttfa) | {"all": ttfa},
            "ttft_ms": summary[mode]["ttft_ms"],
            "total_ms": summary[mode]["total_ms"],
            "chunks": summary[mode]["chunks"],
        }
    result["ratio"] = round(
        result["batch"]["ttfa_ms"]["median_ms"] / result["bidi"]["ttfa_ms"]["median_ms"], 2
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent.bench", description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument(
        "--latency-ms", type=float, default=25.0, help="injected one-way latency per direction"
    )
    parser.add_argument("--jitter-ms", type=float, default=5.0)
    parser.add_argument("--first-token-ms", type=int, default=400)
    parser.add_argument("--tokens-per-s", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=Path("out/agent-bench.json"))
    args = parser.parse_args(argv)

    base = dataclasses.replace(
        EmulatorConfig.from_env(),
        http_port=0,
        h2_port=0,
        llm_backend="script",  # the deterministic answer, so both modes and every run speak the same text
        llm_first_token_ms=args.first_token_ms,
        llm_tokens_per_s=args.tokens_per_s,
    )
    deployed = dataclasses.replace(
        base,
        latency_in_ms=args.latency_ms,
        latency_out_ms=args.latency_ms,
        jitter_in_ms=args.jitter_ms,
        jitter_out_ms=args.jitter_ms,
    )
    sentences_only = {"AGENT_FIRST_FRAGMENT_WORDS": "off"}
    conditions = [
        ("loopback", base, None),
        (f"latency {args.latency_ms:g}±{args.jitter_ms:g} ms", deployed, None),
        ("loopback, sentences only", base, sentences_only),
        (f"latency {args.latency_ms:g}±{args.jitter_ms:g} ms, sentences only", deployed, sentences_only),
    ]
    results = []
    for name, config, env in conditions:
        print(f"running: {name} ({args.runs} runs per mode) ...", file=sys.stderr, flush=True)
        results.append(run_condition(name, config, args.runs, args.prompt, env))

    print(f"{'condition':<34} {'bidi TTFA p50/p90':>20} {'batch TTFA p50/p90':>20} {'ratio':>7}")
    for r in results:
        bidi, batch = r["bidi"]["ttfa_ms"], r["batch"]["ttfa_ms"]
        bidi_cell = f"{bidi['median_ms']:.0f}/{bidi['p90_ms']:.0f} ms"
        batch_cell = f"{batch['median_ms']:.0f}/{batch['p90_ms']:.0f} ms"
        print(f"{r['condition']:<34} {bidi_cell:>20} {batch_cell:>20} {r['ratio']:>6.1f}x")
    report = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "model": {
            "first_token_ms": args.first_token_ms,
            "tokens_per_s": args.tokens_per_s,
            "prompt": args.prompt,
        },
        "runs": args.runs,
        "conditions": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
