"""The README and docs link only to files a clone of this repository has."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# [text](target) with a relative target; anchors and URLs are not files.
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _relative_targets(document: Path) -> list[str]:
    targets = _LINK.findall(document.read_text(encoding="utf-8"))
    return [
        target.split("#", 1)[0]
        for target in targets
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")
    ]


def test_documents_have_links_to_check() -> None:
    # Guards the pattern itself: the README links the contract copied into the repository.
    assert "docs/spec/platform-api.md" in _relative_targets(ROOT / "README.md")


def test_every_relative_link_resolves_to_a_file_in_the_repository() -> None:
    broken = [
        f"{document.relative_to(ROOT)}: {target}"
        for document in _documents()
        for target in _relative_targets(document)
        if not (document.parent / target).resolve().is_file()
        or not (document.parent / target).resolve().is_relative_to(ROOT)
    ]
    assert broken == []
