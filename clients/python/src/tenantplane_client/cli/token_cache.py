"""Cluster tokens kept between kubectl's calls of ``tpctl token``.

kubectl runs the exec plugin for every command (it keeps the credential in memory only), so
without a cache each kubectl call would cost a credentials request. A token is kept in the
user's cache directory (platformdirs: ``$XDG_CACHE_HOME/tpctl/cluster-tokens``), one file per
server, tenant, cluster and credential (the credential by its hash: a changed key or token
asks anew), mode 0600, and used until shortly before it expires.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import platformdirs

from tenantplane_client.cli.profiles import write_private

# A token is asked for anew this long before it expires (at most a tenth of its lifetime):
# kubectl's request must reach the cluster, and be reviewed there, before the expiry.
REFRESH_MARGIN = timedelta(seconds=60)


@dataclass(frozen=True)
class CachedToken:
    token: str
    expires_at: datetime
    obtained_at: datetime

    def fresh(self, now: datetime) -> bool:
        margin = min(REFRESH_MARGIN, (self.expires_at - self.obtained_at) / 10)
        return self.obtained_at <= now < self.expires_at - margin


def cache_directory() -> Path:
    return Path(platformdirs.user_cache_dir("tpctl")) / "cluster-tokens"


def cache_file(url: str, tenant: str, cluster: str, credential: str) -> Path:
    key = "\n".join((url.rstrip("/"), tenant, cluster, credential)).encode()
    return cache_directory() / f"{hashlib.sha256(key).hexdigest()}.json"


def load(path: Path) -> CachedToken | None:
    """The token kept at ``path``; None when there is none, or it cannot be read (it is
    then simply asked for again)."""
    try:
        data = json.loads(path.read_text())
        expires_at = datetime.fromisoformat(str(data["expiresAt"]))
        obtained_at = datetime.fromisoformat(str(data["obtainedAt"]))
        if expires_at.tzinfo is None or obtained_at.tzinfo is None:
            return None
        return CachedToken(str(data["token"]), expires_at, obtained_at)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(path: Path, token: CachedToken) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    document = {
        "token": token.token,
        "expiresAt": token.expires_at.isoformat(),
        "obtainedAt": token.obtained_at.isoformat(),
    }
    write_private(path, json.dumps(document))


def now() -> datetime:
    return datetime.now(UTC)
