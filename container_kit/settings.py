"""A container's settings from its environment (SageMaker passes `ContainerDefinition.Environment` as
plain environment variables).

Each container keeps one config object, a frozen dataclass on `ContainerSettings`, whose fields are read
from variables named after them under the container's prefix (`frame_ms` <- `TTS_FRAME_MS`), typed as
the field (str, int, float, Path). An unset or empty variable leaves the field's default; a value that is
not of the field's type is a `ValueError` naming the variable. A field declared with `setting` says the
values it may take, and a config outside them is refused when it is made, by the variable's name and in
the same words for every container.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

# Where SageMaker puts the model data (ModelDataSource) before the container starts.
SAGEMAKER_MODEL_DIR = Path("/opt/ml/model")


@dataclass(frozen=True)
class Allowed:
    """The values a setting may take: a range (`within`, in `unit`), or a set of words (`one_of`)."""

    within: tuple[float, float] | None = None
    unit: str = ""
    one_of: tuple[str, ...] = ()

    def check(self, variable: str, value: Any) -> None:
        if self.within is not None and not self.within[0] <= value <= self.within[1]:
            unit = f" {self.unit}" if self.unit else ""
            low, high = self.within
            raise ValueError(f"{variable} must be within {low}-{high}{unit}, got {value}")
        if self.one_of and value not in self.one_of:
            named = f"{', '.join(self.one_of[:-1])} or {self.one_of[-1]}"
            raise ValueError(f"{variable} must be {named}, got {value!r}")


def setting(
    default: Any, *, within: tuple[float, float] | None = None, unit: str = "", one_of: tuple[str, ...] = ()
) -> Any:
    """A config field with its default and the values it may take (`Allowed`)."""
    return dataclasses.field(default=default, metadata={"allowed": Allowed(within, unit, one_of)})


@dataclass(frozen=True)
class ContainerSettings:
    """What every container's config holds: its model's files and threads, and where
    `python -m <package> serve` listens (`command.py`): on loopback, except in an image, whose Dockerfile
    says `<PREFIX>_HOST=0.0.0.0`."""

    ENV_PREFIX: ClassVar[str]
    """The container's variables' prefix: `TTS` for `TTS_HOST`, `TTS_PORT`, ..."""
    model_dir: Path | None = None
    """The model directory: `<PREFIX>_MODEL_DIR`, SageMaker's `SM_MODEL_DIR`, or /opt/ml/model when it
    holds the model (`holds_a_model`); None: the weights the package ships, assembled in `cache_dir`."""
    cache_dir: Path = Path.home() / ".cache" / "voice-agent-aws"
    """Where the shipped weights are assembled; the images bake them in (`python -m <package> prepare`)."""
    threads: int = 0
    """The model's CPU threads; 0: one per core."""
    host: str = "127.0.0.1"
    port: int = 8080

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            if (allowed := field.metadata.get("allowed")) is not None:
                allowed.check(self.variable(field.name), getattr(self, field.name))

    @classmethod
    def variable(cls, field: str) -> str:
        """The environment variable of a field: `TTS_FRAME_MS` for `frame_ms`."""
        return f"{cls.ENV_PREFIX}_{field.upper()}"

    @classmethod
    def holds_a_model(cls, path: Path) -> bool:
        """Whether `path` (SageMaker's model directory) holds this container's model data."""
        raise NotImplementedError(f"{cls.__name__} says what its model data looks like")

    @classmethod
    def from_env(cls, **overrides: Any) -> Self:
        """What the environment says, then `overrides` (the command line's flags)."""
        model = model_dir(cls.variable("model_dir"), cls.holds_a_model)
        config = cls(model_dir=model, **environment_fields(cls, skip=("model_dir",)))
        return dataclasses.replace(config, **overrides) if overrides else config


def _parse(variable: str, raw: str, kind: type) -> object:
    if kind is str:
        return raw
    if kind is Path:
        return Path(raw)
    try:
        return kind(raw)
    except ValueError as exc:
        what = "an integer" if kind is int else "a number"
        raise ValueError(f"{variable} must be {what}, got {raw!r}") from exc


def environment_fields(config: type[ContainerSettings], *, skip: Collection[str] = ()) -> dict[str, Any]:
    """The fields of `config` (all but `skip`) that the environment sets: `config(**these)`."""
    types = typing.get_type_hints(config)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(config):
        variable = config.variable(field.name)
        raw = os.environ.get(variable)
        if field.name in skip or raw is None or raw == "":
            continue
        kind = types[field.name]
        if kind not in (str, int, float, Path):
            raise TypeError(f"{config.__name__}.{field.name}: {kind} is not read from the environment")
        values[field.name] = _parse(variable, raw, kind)
    return values


def model_dir(variable: str, holds_a_model: Callable[[Path], bool]) -> Path | None:
    """The model directory: `variable`, else SageMaker's `SM_MODEL_DIR`, else /opt/ml/model when
    `holds_a_model` says the model data is there; None: the weights the package ships."""
    named = os.environ.get(variable) or os.environ.get("SM_MODEL_DIR")
    if named:
        return Path(named)
    return SAGEMAKER_MODEL_DIR if holds_a_model(SAGEMAKER_MODEL_DIR) else None
