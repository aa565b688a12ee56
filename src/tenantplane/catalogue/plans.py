"""The plan catalogue (plans.yaml): each plan's limits, and default cluster resources."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tenantplane.cluster.quantity import BYTE_UNIT, CPU_UNIT, positive_amount
from tenantplane.tenant.models import Plan

PACKAGED_PLANS = Path(__file__).parent / "plans.yaml"


def _check_quantity(value: str) -> str:
    positive_amount(value, BYTE_UNIT)
    return value


class Resources(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu: str
    memory: str
    storage: str

    _check = field_validator("cpu", "memory", "storage")(_check_quantity)

    @property
    def cpu_millicores(self) -> int:
        return positive_amount(self.cpu, CPU_UNIT)

    @property
    def memory_bytes(self) -> int:
        return positive_amount(self.memory, BYTE_UNIT)

    @property
    def storage_bytes(self) -> int:
        return positive_amount(self.storage, BYTE_UNIT)


class PlanLimits(Resources):
    clusters: int = Field(ge=0)


class EventRetention(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True)

    # How long a tenant's events are kept (docs/events.md, "Retention").
    retention_days: int = Field(default=90, ge=1, le=36500, alias="retentionDays")


class PlanEntry(BaseModel):
    # Other sections (billing's prices) sit beside `limits`.
    model_config = ConfigDict(extra="allow", frozen=True)

    limits: PlanLimits
    events: EventRetention = EventRetention()


class Defaults(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    resources: Resources


class PlanCatalogue(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    defaults: Defaults
    plans: dict[Plan, PlanEntry]

    @model_validator(mode="after")
    def _every_plan(self) -> PlanCatalogue:
        missing = set(Plan) - set(self.plans)
        if missing:
            raise ValueError(f"plans missing from the catalogue: {sorted(missing)}")
        return self

    def limits(self, plan: Plan) -> PlanLimits:
        return self.plans[plan].limits


@lru_cache(maxsize=8)
def load_plans(path: Path | None = None) -> PlanCatalogue:
    source = path or PACKAGED_PLANS
    return PlanCatalogue.model_validate(yaml.safe_load(source.read_text(encoding="utf-8")))
