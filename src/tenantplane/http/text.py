"""The character policy of free text a person types (display names and the like).

Refused, wherever they are: control characters (C0, DEL, C1: NUL, tab and newline
included), format characters (Unicode category Cf: bidi embeddings, overrides and isolates
U+202A-202E and U+2066-2069, the marks U+200E/U+200F, zero-width characters U+200B-200D,
U+2060, the BOM U+FEFF, soft hyphen), line and paragraph separators (U+2028/2029),
surrogates, private-use and unassigned code points. What is left renders visibly and the
same way in every terminal, log line and web page, so a name cannot pose as another one
(``admin\u202egnp.exe``) or hide text from the admin reading the key list.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
FORBIDDEN_CHARACTER = "FORBIDDEN_CHARACTER"
MAX_DISPLAY_NAME_LENGTH = 200


def first_forbidden(value: str) -> tuple[int, str] | None:
    """The position and character of the first character the policy refuses."""
    for index, character in enumerate(value):
        if unicodedata.category(character) in FORBIDDEN_CATEGORIES:
            return index, character
    return None


def check_text(value: str) -> str:
    found = first_forbidden(value)
    if found is not None:
        index, character = found
        # The error type is the envelope's code (see errors.validation_error).
        raise PydanticCustomError(
            FORBIDDEN_CHARACTER,
            "character U+{codepoint} at position {index} is not allowed "
            "(control, format, invisible or unassigned)",
            {"codepoint": f"{ord(character):04X}", "index": index},
        )
    return value


# Free text that is shown to people: 1-200 characters of visible text and spaces.
DisplayText = Annotated[
    str,
    Field(min_length=1, max_length=MAX_DISPLAY_NAME_LENGTH),
    AfterValidator(check_text),
]
