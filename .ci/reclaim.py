"""Frees the disk the GPU phase needs, between .ci/run's phases.

The GPU image's build needs about 25 GB free (its 7.9 GB virtual environment is a layer of the build
stage, then written again by the final stage's `COPY --from` and committed a second time by the
classic builder), and CI's machine ran out of it at pip's install, after the default suite and the
arm64 phase had filled the disk. What the later phase never reads goes:

- the engine's own-platform (amd64) images the default suite built (`voice-agent-aws/kokoro-tts`,
  `whisper-stt`, `echo`, `agent`) and the build stages left untagged beside them; the arm64 images and
  their untagged build stages stay, since the rehearsal builds the arm64 agent again from those cached
  layers (cold, under QEMU, it takes about 25 minutes), and so do the base images;
- the installers' caches: pip's wheels, and uv's unpacked wheels that .venv was linked from
  (scripts/bootstrap; torch and its CUDA libraries are about 9 GB there, though the files .venv still
  links to are freed only with it);
- the default suite's pytest temporary directories (model copies, calibrations, recordings).

It prints what each step freed, and, when less than the GPU phase needs is left, the largest entries of
the temporary directory: CI runs on the machine a session worked on, and stop 53's GPU build ran out of
disk beside 28 GB of that session's fresh clones left in /tmp. Run it with the project's interpreter:
`.venv/bin/python .ci/reclaim.py`.
"""

from __future__ import annotations

import getpass
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors

GPU_PHASE_BYTES = 25e9
"""What the GPU image's build needs free (see the docstring)."""
REPOSITORY = "voice-agent-aws/"
KEPT = ("voice-agent-aws/python-base",)
"""The bases every later build starts from."""


def free_bytes() -> int:
    return shutil.disk_usage(Path.cwd()).free


def report(step: str, action: Callable[[], None]) -> None:
    before = free_bytes()
    action()
    print(f"reclaim: {step}: {(free_bytes() - before) / 1e9:+.1f} GB ({free_bytes() / 1e9:.1f} GB free)")


def own_platform_images() -> None:
    client = docker.from_env()
    for image in client.images.list():
        if image.attrs.get("Architecture") == "arm64":
            continue
        tags = [tag for tag in image.tags if tag.startswith(REPOSITORY) and not tag.startswith(KEPT)]
        for tag in tags:
            try:
                client.images.remove(tag)
            except docker.errors.APIError as exc:  # a container still uses it: it stays
                print(f"reclaim: kept {tag}: {exc.explanation or exc}")
    for image in client.images.list(filters={"dangling": True}):
        if image.attrs.get("Architecture") == "arm64":
            continue
        try:
            client.images.remove(image.id)
        except docker.errors.APIError as exc:  # a parent of another image: it stays
            print(f"reclaim: kept {image.short_id}: {exc.explanation or exc}")


def installer_caches() -> None:
    subprocess.run([sys.executable, "-m", "pip", "cache", "purge"], check=False, capture_output=True)
    uv = Path(sys.executable).with_name("uv")
    subprocess.run([uv, "cache", "clean"], check=False, capture_output=True)


def pytest_temporaries() -> None:
    shutil.rmtree(Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}", ignore_errors=True)


def size(path: Path) -> int:
    if not path.is_dir() or path.is_symlink():
        return path.lstat().st_size
    return sum(entry.lstat().st_size for entry in path.rglob("*") if not entry.is_symlink())


def warn_when_short() -> None:
    if free_bytes() >= GPU_PHASE_BYTES:
        return
    needed = GPU_PHASE_BYTES / 1e9
    print(f"reclaim: {free_bytes() / 1e9:.1f} GB free, the GPU phase needs about {needed:.0f} GB")
    entries = []
    for entry in Path(tempfile.gettempdir()).iterdir():
        try:
            entries.append((size(entry), entry))
        except OSError:  # removed or unreadable while we looked
            continue
    for used, entry in sorted(entries, reverse=True)[:10]:
        print(f"reclaim:   {used / 1e9:6.1f} GB {entry}")


def main() -> None:
    report("the default suite's amd64 images and build stages", own_platform_images)
    report("the installers' caches", installer_caches)
    report("pytest's temporary directories", pytest_temporaries)
    warn_when_short()


if __name__ == "__main__":
    main()
