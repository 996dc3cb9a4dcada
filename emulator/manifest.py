"""Manifests: the SageMaker, AgentCore and CloudWatch resources to create at start-up, as YAML, and how
to build and run the images they name.

```yaml
images:                       # optional: image -> how the runtimes run it and the builder builds it
  my-model: {command: ["{python}", "-m", "my_model", "--port", "{port}"], bidirectional: true,
             dockerfile: my_model/Dockerfile, build_args: {A: "1"}, listen_variables: [HOST, PORT]}
resources:                    # applied in order, through the same code as the API
  - kind: Model               # spec = the CreateModel request, exactly as boto3 takes it
    spec: {ModelName: m, PrimaryContainer: {Image: my-model:latest}}
  - kind: EndpointConfig
    spec: {EndpointConfigName: c, ProductionVariants: [{VariantName: AllTraffic, ModelName: m,
           InstanceType: ml.g5.xlarge, InitialInstanceCount: 1}]}
  - kind: Endpoint
    spec: {EndpointName: e, EndpointConfigName: c}
  - kind: AgentRuntime        # spec = the bedrock-agentcore-control create_agent_runtime request
    spec: {agentRuntimeName: a, agentRuntimeArtifact: {containerConfiguration: {containerUri: agent:latest}},
           roleArn: "arn:aws:iam::123456789012:role/a", environmentVariables: {K: V}}
  - kind: Dashboard           # spec = the CloudWatch PutDashboard request (DashboardBody: a JSON string)
    spec: {DashboardName: d, DashboardBody: '{"widgets": [{"type": "metric", "properties": {"metrics":
           [["Namespace", "Metric", "Dimension", "value", {"stat": "p90", "period": 60}]]}}]}'}
```

The product's manifests (compose/*.yaml but echo.yaml) are written from deploy/product.py by
`python -m deploy manifests`; the emulator imports nothing of deploy and knows no image of the product.
A dashboard is what `python -m emulator status` shows the latest values of (emulator/admin/dashboards.py),
as a stack's `AWS::CloudWatch::Dashboard` is: the emulator names no metric of its own.

A bare list is read as `resources`. `include: [other.yaml, ...]` (paths relative to the manifest) applies
those manifests' resources first, in order, then this one's; their `images` are merged, this one's last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from emulator.config import ConfigError, ImageSpec

KINDS = {
    "Model": ("sagemaker", "CreateModel"),
    "EndpointConfig": ("sagemaker", "CreateEndpointConfig"),
    "Endpoint": ("sagemaker", "CreateEndpoint"),
    "AgentRuntime": ("bedrock-agentcore-control", "CreateAgentRuntime"),
    "Dashboard": ("cloudwatch", "PutDashboard"),
}
"""kind -> (service, operation) of the call that creates it (emulator/server/app.py's `Services.call`)."""
NAME_FIELDS = {"AgentRuntime": "agentRuntimeName", "Dashboard": "DashboardName"}
DEFAULT_MANIFEST = Path(__file__).resolve().parent.parent / "compose" / "emulator.yaml"
VOICE_MANIFEST = DEFAULT_MANIFEST.with_name("voice.yaml")
"""The default stack and the speech-to-text endpoint: the agent that listens (its `/ws`, the page's mic)."""


class ManifestError(ConfigError):
    """The manifest cannot be read or does not have the expected shape."""


@dataclass(frozen=True)
class Resource:
    kind: str
    spec: dict[str, Any]

    @property
    def service(self) -> str:
        return KINDS[self.kind][0]

    @property
    def operation(self) -> str:
        return KINDS[self.kind][1]

    @property
    def name(self) -> str:
        return str(self.spec.get(NAME_FIELDS.get(self.kind, f"{self.kind}Name"), "?"))


@dataclass(frozen=True)
class Manifest:
    resources: tuple[Resource, ...] = ()
    images: dict[str, ImageSpec] = field(default_factory=dict)
    source: str = "<inline>"

    @property
    def endpoints(self) -> list[str]:
        return [r.name for r in self.resources if r.kind == "Endpoint"]

    @property
    def agent_runtimes(self) -> list[str]:
        return [r.name for r in self.resources if r.kind == "AgentRuntime"]

    @property
    def container_images(self) -> list[str]:
        """The container images the manifest's models and agent runtimes name, in order, once each."""
        images = []
        for resource in self.resources:
            if resource.kind == "Model":
                containers = resource.spec.get("Containers") or [{}]
                primary = resource.spec.get("PrimaryContainer") or containers[0]
                if isinstance(primary, dict) and isinstance(primary.get("Image"), str):
                    images.append(primary["Image"])
            elif resource.kind == "AgentRuntime":
                artifact = resource.spec.get("agentRuntimeArtifact") or {}
                uri = (artifact.get("containerConfiguration") or {}).get("containerUri")
                if isinstance(uri, str):
                    images.append(uri)
        return list(dict.fromkeys(images))

    @classmethod
    def from_obj(cls, obj: Any, source: str = "<inline>") -> Manifest:
        if isinstance(obj, list):
            obj = {"resources": obj}
        if not isinstance(obj, dict):
            raise ManifestError(f"{source}: expected a mapping with `resources:` (or a list of resources)")
        unknown = set(obj) - {"resources", "images"}
        if unknown:
            raise ManifestError(f"{source}: unknown top-level keys {sorted(unknown)}")
        resources = []
        for index, item in enumerate(obj.get("resources") or []):
            if (
                not isinstance(item, dict)
                or item.get("kind") not in KINDS
                or not isinstance(item.get("spec"), dict)
            ):
                raise ManifestError(
                    f"{source}: resources[{index}] must be {{kind: {'|'.join(KINDS)}, spec: {{...}}}}, "
                    f"got {item!r}"
                )
            resources.append(Resource(item["kind"], dict(item["spec"])))
        raw_images = obj.get("images") or {}
        if not isinstance(raw_images, dict):
            raise ManifestError(f"{source}: `images` must map image names to commands")
        try:
            images = {str(name): ImageSpec.from_obj(spec) for name, spec in raw_images.items()}
        except ConfigError as exc:
            raise ManifestError(f"{source}: {exc}") from exc
        return cls(tuple(resources), images, source)


def load_manifest(path: str | Path, _including: tuple[Path, ...] = ()) -> Manifest:
    path = Path(path)
    if path.resolve() in _including:
        raise ManifestError(f"manifest {path} includes itself (through {' -> '.join(map(str, _including))})")
    try:
        obj = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ManifestError(f"cannot read manifest {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ManifestError(f"manifest {path} is not valid YAML: {exc}") from exc
    included = obj.pop("include", None) if isinstance(obj, dict) else None  # a file's paths, read here
    manifest = Manifest.from_obj(obj, str(path))
    if included is None:
        return manifest
    if not isinstance(included, list) or not all(isinstance(name, str) for name in included):
        raise ManifestError(f"{path}: `include` must be a list of manifest paths")
    parts = [load_manifest(path.parent / name, (*_including, path.resolve())) for name in included]
    parts.append(manifest)
    images: dict[str, ImageSpec] = {}
    for part in parts:
        images.update(part.images)
    return Manifest(tuple(r for part in parts for r in part.resources), images, str(path))
