"""Email addresses as members are known by: validated, then normalised to one spelling.

The same function normalises the address an admin types into ``POST /members`` and the
``email`` claim of an OIDC token, so the two always meet in the ``members`` table.
"""

from __future__ import annotations

from email_validator import EmailNotValidError, validate_email

MAX_EMAIL_LENGTH = 320


class InvalidEmail(ValueError):
    pass


def normalise_email(value: str) -> str:
    """The canonical form: syntax checked (no DNS lookup), Unicode NFC, lower case.

    The whole address is lower-cased, local part included: RFC 5321 lets a server treat
    local parts case-sensitively, but no mainstream provider does, and two members whose
    addresses differ only in case would be a trap for the admins who manage them.
    """
    try:
        checked = validate_email(value.strip(), check_deliverability=False)
    except EmailNotValidError as exc:
        raise InvalidEmail(f"invalid email address: {exc}") from None
    normalised = checked.normalized.lower()
    if len(normalised) > MAX_EMAIL_LENGTH:
        raise InvalidEmail("invalid email address: too long")
    return normalised
