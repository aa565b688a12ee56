"""Name and identifier rules shared by path parameters and bodies."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import Path
from pydantic import AfterValidator, Field

from tenantplane.http.errors import ValidationFailed

# Checked with fullmatch: Python's "$" also matches before a final newline ("dev\n").
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_DNS_LABEL = re.compile(DNS_LABEL_PATTERN)
# The rule of check_resource_name as JSON Schema, for the OpenAPI document only: the
# validators keep answering with their own messages and codes.
RESOURCE_NAME_SCHEMA: dict[str, object] = {
    "pattern": DNS_LABEL_PATTERN,
    "minLength": 2,
    "maxLength": 63,
}
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def is_dns_label(value: str, *, min_length: int = 1) -> bool:
    """RFC 1123 label: lower-case alphanumerics and '-', alphanumeric at both ends."""
    return min_length <= len(value) <= 63 and bool(_DNS_LABEL.fullmatch(value))


def is_dns_subdomain(value: str) -> bool:
    return 1 <= len(value) <= 253 and bool(_DNS_SUBDOMAIN.fullmatch(value))


def check_resource_name(value: str) -> str:
    if not is_dns_label(value, min_length=2):
        raise ValueError(
            "must be DNS-safe: 2-63 lower-case letters, digits or '-', "
            "starting and ending with a letter or digit"
        )
    return value


ResourceName = Annotated[
    str,
    AfterValidator(check_resource_name),
    Field(json_schema_extra=RESOURCE_NAME_SCHEMA),
]


def path_name(value: str, *, what: str, field: str = "name") -> str:
    """Validate a name taken from the path (400 with the envelope when invalid)."""
    if not is_dns_label(value, min_length=2):
        raise ValidationFailed(
            f"invalid {what} name: must be DNS-safe, 2-63 characters",
            field=field,
            code="INVALID_NAME",
        )
    return value


def resource_name_path(description: str) -> Any:
    """A path parameter documented with the resource-name rule (checked by path_name)."""
    return Path(description=description, json_schema_extra=RESOURCE_NAME_SCHEMA)


TenantPath = Annotated[str, resource_name_path("Tenant name")]
