"""Every feature's models, imported so that Base.metadata knows all tables (Alembic)."""

from tenantplane.alerting.models import AlertingConfig, AlertingCredentials
from tenantplane.apikey.models import ApiKey
from tenantplane.db.base import Base
from tenantplane.member.models import Member
from tenantplane.tenant.models import Tenant

__all__ = ["AlertingConfig", "AlertingCredentials", "ApiKey", "Base", "Member", "Tenant"]
