from __future__ import annotations

from pathlib import Path

from tenantplane.config import Settings
from tenantplane.providers.alerting.base import AlertingBackend, DatabaseBackend, DisabledBackend


def backend_from_settings(settings: Settings) -> AlertingBackend:
    """The configured backend; raises ValueError at start-up when its settings are missing."""
    return build_backend(
        settings.alerting_backend,
        mimir_url=settings.mimir_url,
        alertmanager_url=settings.alertmanager_url,
        alertmanager_config_file=settings.alertmanager_config_file,
        timeout=settings.alerting_backend_timeout_seconds,
    )


def build_backend(
    kind: str,
    *,
    mimir_url: str | None,
    alertmanager_url: str | None,
    alertmanager_config_file: Path,
    timeout: float,
) -> AlertingBackend:
    if kind == "disabled":
        return DisabledBackend()
    if kind == "mimir":
        from tenantplane.providers.alerting.mimir import MimirBackend

        if not mimir_url:
            raise ValueError("TENANTPLANE_MIMIR_URL is required with ALERTING_BACKEND=mimir")
        return MimirBackend(mimir_url, timeout)
    if kind == "alertmanager":
        from tenantplane.providers.alerting.alertmanager import SharedAlertmanagerBackend

        if not alertmanager_url:
            raise ValueError(
                "TENANTPLANE_ALERTMANAGER_URL is required with ALERTING_BACKEND=alertmanager"
            )
        return SharedAlertmanagerBackend(alertmanager_url, alertmanager_config_file, timeout)
    return DatabaseBackend()
