"""Profiles: where the server is, which tenant, which credential.

Kept in ``config.yaml`` under the user's config directory (platformdirs: on Linux
``$XDG_CONFIG_HOME/tpctl``, else ``~/.config/tpctl``), mode 0600 since it may hold an API key.
The environment overrides the chosen profile field by field: TPCTL_URL, TPCTL_TENANT,
TPCTL_API_KEY, TPCTL_TOKEN (TPCTL_PROFILE picks the profile).
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import platformdirs
import yaml

from tenantplane_client._common import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, authorization

ENV_URL = "TPCTL_URL"
ENV_TENANT = "TPCTL_TENANT"
ENV_API_KEY = "TPCTL_API_KEY"
ENV_TOKEN = "TPCTL_TOKEN"  # noqa: S105 (the variable's name, not a token)
ENV_PROFILE = "TPCTL_PROFILE"
ENV_RETRY_BASE = "TPCTL_RETRY_BASE_SECONDS"
ENV_PAGE_SIZE = "TPCTL_PAGE_SIZE"
DEFAULT_PROFILE = "default"


class ConfigError(Exception):
    """The profile lacks what the command needs, or the config file is unreadable."""


@dataclass
class Profile:
    url: str | None = None
    tenant: str | None = None
    api_key: str | None = None
    token: str | None = None

    @property
    def credential(self) -> str | None:
        return self.api_key or self.token

    def with_environment(self, environ: dict[str, str] | os._Environ[str]) -> Profile:
        return Profile(
            url=environ.get(ENV_URL) or self.url,
            tenant=environ.get(ENV_TENANT) or self.tenant,
            # Either credential from the environment replaces both of the profile's.
            api_key=environ.get(ENV_API_KEY) or (None if environ.get(ENV_TOKEN) else self.api_key),
            token=environ.get(ENV_TOKEN) or (None if environ.get(ENV_API_KEY) else self.token),
        )

    def require(self) -> tuple[str, str, str]:
        missing = [
            name
            for name, value in (
                (f"url ({ENV_URL})", self.url),
                (f"tenant ({ENV_TENANT})", self.tenant),
                (f"api key or token ({ENV_API_KEY} / {ENV_TOKEN})", self.credential),
            )
            if not value
        ]
        if missing or not (self.url and self.tenant and self.credential):
            raise ConfigError(
                "missing " + ", ".join(missing) + ": set them with `tpctl config set-profile`"
            )
        _check_url(self.url)
        return self.url, self.tenant, check_credential(self.credential)


def check_credential(credential: str) -> str:
    """The SDK's check of a key or token (sent in a header), as a configuration error."""
    try:
        authorization(credential)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return credential


def _check_url(url: str) -> None:
    """A server origin, or a configuration error now (not 'Unreachable' after retries)."""
    where = f"{ENV_URL} or the profile's url {url!r}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"{where}: must start with http:// or https://")
    if not parts.hostname:
        raise ConfigError(f"{where}: no host")


@dataclass
class Config:
    current: str = DEFAULT_PROFILE
    profiles: dict[str, Profile] = field(default_factory=dict)

    def to_yaml(self) -> str:
        data = {
            "current": self.current,
            "profiles": {
                name: {key: value for key, value in asdict(profile).items() if value is not None}
                for name, profile in sorted(self.profiles.items())
            },
        }
        return yaml.safe_dump(data, sort_keys=False)


def config_path() -> Path:
    return Path(platformdirs.user_config_dir("tpctl")) / "config.yaml"


def load(path: Path | None = None) -> Config:
    path = path or config_path()
    if not path.exists():
        return Config()
    try:
        data: Any = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is not a tpctl configuration")
    profiles = {
        str(name): Profile(
            **{k: str(v) for k, v in (values or {}).items() if k in Profile.__dataclass_fields__}
        )
        for name, values in (data.get("profiles") or {}).items()
    }
    return Config(current=str(data.get("current") or DEFAULT_PROFILE), profiles=profiles)


def save(config: Config, path: Path | None = None) -> Path:
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_private(path, config.to_yaml())
    return path


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, readable by the owner only (0600)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as stream:
        stream.write(text)
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)


def resolve(profile_name: str | None = None, path: Path | None = None) -> tuple[str, Profile]:
    """The profile a command uses, with the environment's overrides applied."""
    config = load(path)
    name = profile_name or os.environ.get(ENV_PROFILE) or config.current
    profile = config.profiles.get(name, Profile())
    return name, profile.with_environment(os.environ)


def no_credential(profile_name: str) -> str:
    """The one line that says how to give a command its credential."""
    return (
        f"no API key or token: set {ENV_API_KEY} or {ENV_TOKEN}, or save one in profile "
        f"{profile_name!r} (`tpctl config set-profile {profile_name} --api-key-stdin`)"
    )


def save_if_absent(name: str, profile: Profile, path: Path | None = None) -> bool:
    """Save ``profile`` (settings resolved from the environment) as ``name`` unless the
    configuration has a profile of that name; whether it was saved."""
    config = load(path)
    if name in config.profiles:
        return False
    config.profiles[name] = profile
    if len(config.profiles) == 1:
        config.current = name
    save(config, path)
    return True


def retry_base_seconds() -> float:
    """The first backoff step (1 s, the spec's); smaller for impatient scripts and tests."""
    value = os.environ.get(ENV_RETRY_BASE)
    if not value:
        return 1.0
    try:
        seconds = float(value)
    except ValueError as exc:
        raise ConfigError(f"{ENV_RETRY_BASE} must be a number of seconds, not {value!r}") from exc
    if not 0 <= seconds <= 30:
        raise ConfigError(f"{ENV_RETRY_BASE} must be between 0 and 30 seconds")
    return seconds


def page_size() -> int:
    """Items asked per page when a list is walked (every list is walked to its end)."""
    value = os.environ.get(ENV_PAGE_SIZE)
    if not value:
        return DEFAULT_PAGE_SIZE
    if not value.isdigit() or not 1 <= int(value) <= MAX_PAGE_SIZE:
        raise ConfigError(f"{ENV_PAGE_SIZE} must be a whole number from 1 to {MAX_PAGE_SIZE}")
    return int(value)


def sent_in_clear(url: str) -> bool:
    """True when ``url`` is plain http:// to a host that is not loopback (127.0.0.0/8,
    ::1, localhost): the credential would cross a network unencrypted."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "http":
        return False
    host = (parts.hostname or "").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True
