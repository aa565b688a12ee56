"""Every feature's models, imported so that Base.metadata knows all tables (Alembic)."""

from tenantplane.alerting.models import AlertingConfig, AlertingCredentials
from tenantplane.apikey.models import ApiKey
from tenantplane.billing.models import (
    BillingProfile,
    BillingSchedule,
    ChargeAttempt,
    CreditEntry,
    Invoice,
    InvoiceLineItem,
    ProviderEvent,
)
from tenantplane.cluster.models import Cluster, ClusterHistory
from tenantplane.console.models import ConsoleSession, ConsoleSignIn
from tenantplane.db.base import Base
from tenantplane.event.models import Event, EventChain
from tenantplane.event.webhook.models import Webhook, WebhookDelivery
from tenantplane.idempotency.models import IdempotencyRecord
from tenantplane.member.models import Member
from tenantplane.providers.orchestrator.simulator_models import SimulatedCluster
from tenantplane.providers.sync.simulator_models import SimulatedSecretCopy
from tenantplane.secret.models import Secret
from tenantplane.tenant.models import Tenant

__all__ = [
    "AlertingConfig",
    "AlertingCredentials",
    "ApiKey",
    "Base",
    "BillingProfile",
    "BillingSchedule",
    "ChargeAttempt",
    "Cluster",
    "ClusterHistory",
    "ConsoleSession",
    "ConsoleSignIn",
    "CreditEntry",
    "Event",
    "EventChain",
    "IdempotencyRecord",
    "Invoice",
    "InvoiceLineItem",
    "Member",
    "ProviderEvent",
    "Secret",
    "SimulatedCluster",
    "SimulatedSecretCopy",
    "Tenant",
    "Webhook",
    "WebhookDelivery",
]
