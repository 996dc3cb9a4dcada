"""`python -m benchmarks [STUDY ...] [--quick] [--out DIR]`: the article's measurements, reproduced here.

A development tool, not a shipped package: it is run from the repository root and nothing in `tts/`,
`emulator/`, `agent/` or `deploy/` imports it. Each study is one module `benchmarks/<study>.py` with
`run(quick: bool, out: Path) -> dict`: it measures, prints a table, and leaves `out/<study>.json` and
`out/<study>.png` through the helpers in `benchmarks/report.py` (one table printer, one JSON writer,
one plot style, one progress bar). `benchmarks/__main__.py` runs the named studies, or all of them.
"""
