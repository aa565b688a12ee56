"""What a Flux ``HelmRelease`` (helm.toolkit.fluxcd.io/v2) says about its release.

Read as helm-controller writes it (internal/controller/helmrelease_controller.go,
internal/reconcile/atomic_release.go), not as one might guess:
- ``status.observedGeneration`` moves on a success or a *terminal* failure only, so a Ready
  release that turns ``Ready=False`` for a transient reason (``SourceNotReady``,
  ``ArtifactFailed``) keeps ``observedGeneration == generation``: that is no failure.
- A failure is terminal when the remediation retries are spent: ``Stalled=True`` (reason
  ``RetriesExceeded``, or a reason such as ``InvalidChartReference``). Flux then waits for a
  new generation or a reset request (``reconcile.fluxcd.io/resetAt``) before trying again.
- ``status.history`` records failed installs too: a release was installed once a snapshot
  was ``deployed`` (or later ``superseded``).
"""

from __future__ import annotations

from dataclasses import dataclass

from tenantplane.providers.kube import Manifest, condition, dig

# Snapshot statuses of a release that was, at some point, installed successfully.
_INSTALLED = {"deployed", "superseded"}
REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"
RESET_AT = "reconcile.fluxcd.io/resetAt"


@dataclass(frozen=True)
class ReleaseState:
    installed: bool  # a release of this HelmRelease was deployed once (it may serve)
    current: bool  # Flux handled this generation: released, or failed terminally
    released: bool  # the current generation is released and Ready
    stalled: str | None  # the terminal failure ("<reason>: <message>"), if any
    progress: str  # what Flux says now (Ready's reason and message)
    # Flux works on (or last tried) an older generation than the release's own: a change
    # applied since is not taken up yet (``status.lastAttemptedGeneration``, set when an
    # attempt begins; unknown when absent).
    behind: bool = False


def release_state(release: Manifest) -> ReleaseState:
    ready = condition(release, "Ready")
    stalled = condition(release, "Stalled")
    generation = release["metadata"].get("generation")
    current = dig(release, "status", "observedGeneration") == generation
    attempted = dig(release, "status", "lastAttemptedGeneration", default=None)
    history = dig(release, "status", "history", default=None) or []
    installed = any(snapshot.get("status") in _INSTALLED for snapshot in history)
    reason = ready.get("reason") or "Progressing"
    progress = f"{reason}: {ready.get('message')}" if ready.get("message") else reason
    terminal = None
    if stalled.get("status") == "True":
        # Stalled says that Flux gave up; Ready keeps the last attempt's error.
        terminal = f"{stalled.get('reason', 'Stalled')}: {stalled.get('message', '')}; {progress}"
    return ReleaseState(
        installed=installed,
        current=current,
        released=current and ready.get("status") == "True",
        stalled=terminal,
        progress=progress,
        behind=not current and attempted is not None and attempted != generation,
    )
