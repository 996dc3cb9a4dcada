"""House rules for the images, read from their Dockerfiles as each is built (tests/test_house.py has the
rest): they copy no test or development tool, an image that copies code importing the container kit
copies the kit, and the agent image copies every module of ours that what it copies imports."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tests.support.dockerfiles import builds_of
from tests.support.paths import REPO
from tests.test_house import GRAPH, module_name, within

IMAGE_TOOLS = ("tools", "tests", "benchmarks", "local_stack")


def dockerfiles() -> list[Path]:
    return sorted(
        path
        for pattern in ("Dockerfile*", "*.Dockerfile")
        for path in REPO.rglob(pattern)
        if not path.relative_to(REPO).parts[0].startswith(".")
    )


def copied_sources(dockerfile: Path) -> Iterator[str]:
    """The repository paths each `COPY` line of `dockerfile` sends into the image (`--from` stages
    copy from another stage, not from the repository), for each way it is built (`builds_of`: the kit's
    Dockerfile copies `${PACKAGE}` as the package each image names)."""
    for build in builds_of(dockerfile):
        yield from _copied(build.text())


def _copied(text: str) -> Iterator[str]:
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].upper() not in ("COPY", "ADD"):
            continue
        flags = [w for w in words[1:] if w.startswith("--")]
        if any(flag.startswith("--from") for flag in flags):
            continue
        yield from [w for w in words[1:] if not w.startswith("--")][:-1]


def test_the_images_carry_no_tool():
    assert len(dockerfiles()) >= 4, dockerfiles()
    wrong = []
    for dockerfile in dockerfiles():
        for source in copied_sources(dockerfile):
            top = source.strip("/").split("/")[0]
            if top in IMAGE_TOOLS or top in (".", ""):
                wrong.append(f"{dockerfile.relative_to(REPO)} copies {source}")
            elif not (REPO / source).exists():
                wrong.append(f"{dockerfile.relative_to(REPO)} copies {source}, which does not exist")
    assert not wrong, "\n".join(wrong)


def test_the_containers_share_the_kit_and_their_images_copy_it():
    """tts and stt are built from container_kit (each imports it), and every image that copies code
    importing the kit copies the kit too, for every way it is built."""
    for room in ("tts", "stt"):
        assert any(within(t, ("container_kit",)) for n, ts in GRAPH.items() if within(n, (room,)) for t in ts)
    wrong = []
    for dockerfile in dockerfiles():
        for build in builds_of(dockerfile):
            sources = [REPO / source for source in _copied(build.text())]
            if REPO / "container_kit" in sources:
                continue
            for path in sources:
                files = (
                    [path] if path.suffix == ".py" else sorted(path.rglob("*.py")) if path.is_dir() else []
                )
                wrong += [
                    f"{build} copies {module_name(file)}, which imports the kit, and not container_kit"
                    for file in files
                    if any(within(target, ("container_kit",)) for target in GRAPH[module_name(file)])
                ]
    assert not wrong, "\n".join(wrong)


def test_what_the_agent_image_copies_imports_nothing_it_does_not_copy():
    """The agent image copies a few files of `tts` (and `facts.py`) beside the agent: those files, and
    their packages' `__init__.py`, must import nothing of ours that the image lacks."""
    copied = {
        module_name(path)
        for source in copied_sources(REPO / "agent" / "Dockerfile")
        if (path := REPO / source).suffix == ".py"
    }
    wrong = [
        f"{name} imports {target}, which agent/Dockerfile does not copy"
        for name in sorted(copied)
        for target in GRAPH[name]
        if not within(target, ("agent",)) and target not in copied and target.rpartition(".")[0] not in copied
    ]
    assert {"facts", "tts.wire.sse", "tts.text.speech_text", "tts.wire", "tts.text"} <= copied, copied
    assert not wrong, "\n".join(wrong)
