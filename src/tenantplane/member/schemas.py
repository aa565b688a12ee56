from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from tenantplane.emails import MAX_EMAIL_LENGTH, normalise_email
from tenantplane.http.schemas import InputModel, OutputModel
from tenantplane.member.models import Member, Role

# Validated and normalised on input; an invalid address is a 400 naming the field.
Email = Annotated[str, Field(max_length=MAX_EMAIL_LENGTH), AfterValidator(normalise_email)]


class MemberCreate(InputModel):
    email: Email
    role: Role


class MemberUpdate(InputModel):
    role: Role


class MemberRead(OutputModel):
    email: str
    role: Role

    @classmethod
    def of(cls, member: Member) -> MemberRead:
        return cls(email=member.email, role=member.role)
