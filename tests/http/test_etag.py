"""If-Match and If-None-Match read entity-tag lists with one parser (http/etag.py): the forms
docs/api.md accepts, and refusals for anything naming another version."""

from __future__ import annotations

import pytest

from tenantplane.http.errors import PreconditionFailed
from tenantplane.http.etag import check_if_match, entity_tags


@pytest.mark.parametrize(
    ("header", "tags"),
    [
        ('"3"', ["3"]),
        ('W/"3"', ["3"]),
        ("3", ["3"]),
        ('"1", W/"2" ,3', ["1", "2", "3"]),
        ('"a,b", "4"', ["a,b", "4"]),
        ("*", None),
        ('"1", *', None),
        ('"3', []),
        ("", []),
    ],
)
def test_entity_tag_lists(header: str, tags: list[str] | None) -> None:
    assert entity_tags(header) == tags


@pytest.mark.parametrize("header", [None, '"7"', 'W/"7"', "7", '"1", "7"', "*"])
def test_if_match_naming_the_current_version_passes(header: str | None) -> None:
    check_if_match(header, 7)


@pytest.mark.parametrize("header", ['"6"', '"1", W/"8"', '"7', "", "x7"])
def test_if_match_naming_another_version_is_412(header: str) -> None:
    with pytest.raises(PreconditionFailed):
        check_if_match(header, 7)


def test_if_match_star_on_a_missing_resource_is_412() -> None:
    with pytest.raises(PreconditionFailed):
        check_if_match("*", None)
