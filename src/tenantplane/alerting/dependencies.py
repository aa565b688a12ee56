"""The dependency every alerting route takes besides the caller: its session, the backend,
the key ring and the policy, with the service's read and write bound to them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, TypeVar

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.access import Principal
from tenantplane.alerting import service
from tenantplane.alerting.document import Document
from tenantplane.alerting.service import Focus, TenantRef
from tenantplane.alerting.validation.policy import Policy
from tenantplane.db.session import SessionDep
from tenantplane.keys import KeyRing
from tenantplane.providers.alerting.base import AlertingBackend

T = TypeVar("T")


async def get_backend(request: Request) -> AlertingBackend:
    backend: AlertingBackend = request.app.state.alerting_backend
    return backend


BackendDep = Annotated[AlertingBackend, Depends(get_backend)]


@dataclass(frozen=True)
class Alerting:
    """What every alerting route needs besides the caller: the session and the backend."""

    session: AsyncSession
    backend: AlertingBackend
    keys: KeyRing
    policy: Policy

    async def read(self, principal: Principal) -> service.Snapshot:
        return await service.read(
            self.session, self.backend, _tenant(principal), self.keys, self.policy
        )

    async def write(
        self,
        principal: Principal,
        if_match: str | None,
        change: Callable[[Document], T],
        focus: Focus | Callable[[Document], Focus] = service.WHOLE_DOCUMENT,
        *,
        reset: bool = False,
    ) -> service.Written[T]:
        return await service.write(
            self.session,
            self.backend,
            _tenant(principal),
            self.keys,
            if_match,
            change,
            focus,
            reset=reset,
            policy=self.policy,
        )


async def get_alerting(session: SessionDep, backend: BackendDep, request: Request) -> Alerting:
    return Alerting(session, backend, request.app.state.keys, request.app.state.alerting_policy)


AlertingDep = Annotated[Alerting, Depends(get_alerting)]


def _tenant(principal: Principal) -> TenantRef:
    return TenantRef(principal.tenant_id, principal.tenant_name)
