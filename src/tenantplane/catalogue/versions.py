"""The Kubernetes versions catalogue (versions.yaml): supported minors, oldest first."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PACKAGED_VERSIONS = Path(__file__).parent / "versions.yaml"
_MINOR = re.compile(r"(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})")


def parse_minor(version: str) -> tuple[int, int] | None:
    """``"1.33"`` → ``(1, 33)``; None unless the text is exactly ``<major>.<minor>``."""
    match = _MINOR.fullmatch(version)
    return (int(match[1]), int(match[2])) if match else None


class SupportedVersion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    patch: int = Field(ge=0)

    @field_validator("version")
    @classmethod
    def _minor(cls, value: str) -> str:
        if parse_minor(value) is None:
            raise ValueError("version must be <major>.<minor>")
        return value

    @property
    def minor(self) -> tuple[int, int]:
        parsed = parse_minor(self.version)
        assert parsed is not None
        return parsed

    @property
    def kubernetes_version(self) -> str:
        return f"v{self.version}.{self.patch}"


class VersionCatalogue(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    default: str
    versions: list[SupportedVersion] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> VersionCatalogue:
        minors = [entry.minor for entry in self.versions]
        if minors != sorted(set(minors)):
            raise ValueError("versions must be listed oldest first, each once")
        if self.get(self.default) is None:
            raise ValueError("the default version must be one of the supported versions")
        return self

    def get(self, version: str) -> SupportedVersion | None:
        return next((entry for entry in self.versions if entry.version == version), None)

    @property
    def oldest(self) -> SupportedVersion:
        return self.versions[0]

    def is_next_minor(self, current: str, target: str) -> bool:
        """True when ``target`` is the supported version right after ``current``."""
        names = [entry.version for entry in self.versions]
        return (
            current in names
            and names.index(current) + 1 < len(names)
            and (names[names.index(current) + 1] == target)
        )


@lru_cache(maxsize=8)
def load_versions(path: Path | None = None) -> VersionCatalogue:
    source = path or PACKAGED_VERSIONS
    return VersionCatalogue.model_validate(yaml.safe_load(source.read_text(encoding="utf-8")))
