"""Every feature's models, imported so that Base.metadata knows all tables (Alembic)."""

from tenantplane.apikey.models import ApiKey
from tenantplane.db.base import Base
from tenantplane.member.models import Member
from tenantplane.tenant.models import Tenant

__all__ = ["ApiKey", "Base", "Member", "Tenant"]
