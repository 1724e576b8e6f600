"""The repository explains itself: no file cites a document that lives outside it.

raytop was built from notes kept beside the repository (Ray experiments, design decisions,
a style guide). A comment that says "see note h" sends a reader to a file they do not
have; the fact itself belongs in the comment, or in ``docs/RAY_FACTS.md`` for Ray's
behaviour. This test names every file:line that still cites one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("src", "tests", "examples", "benchmarks", "compat", "docs")
THIS_FILE = Path(__file__).resolve()

# The outside documents and the ways they were cited. Spelled in pieces so that this file
# does not match itself even if someone drops the THIS_FILE exclusion.
_NOTES = "RAY_" + "NOTES"
_DESIGN = "DE" + "SIGN"
_STYLE = "STY" + "LE"
OUTSIDE_CITATION = re.compile(
    rf"{_NOTES}"
    rf"|\b{_DESIGN}\.md\b"
    rf"|\b{_DESIGN}\b,?\s+(decision|revision)"
    rf"|\({_DESIGN}\b"
    rf"|\b{_STYLE}\.md\b"
    r"|\.\./shared\b"
    r"|/work/shared\b"
)


def outside_citations(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each line of ``text`` that cites an outside document."""
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), start=1)
        if OUTSIDE_CITATION.search(line)
    ]


def scanned_files() -> list[Path]:
    files = []
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path != THIS_FILE:
                files.append(path)
    return files


def citations_in(path: Path) -> list[tuple[int, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []  # binary fixtures (checkpoints, images) hold no comments
    return outside_citations(text)


@pytest.mark.parametrize(
    "line",
    [
        f"# the barrier ({_NOTES} h)",
        f'"""The detached driver ({_DESIGN} decision 4)."""',
        f"raytop never calls ray.init ({_DESIGN}, revisions)",
        f"see {_DESIGN}.md",
        f"as {_STYLE}.md says",
        "read ../shared/notes",
    ],
)
def test_each_way_of_citing_is_caught(line: str) -> None:
    assert outside_citations(f"first line\n{line}\n") == [(2, line)]


@pytest.mark.parametrize(
    "line",
    [
        "_STATUS_STYLE = {",
        "# shared/exclusive locks",
        "design decision: the ledger lives on the head",
        "see docs/RAY_FACTS.md#report-barrier",
    ],
)
def test_ordinary_words_are_not_citations(line: str) -> None:
    assert outside_citations(line) == []


def test_no_file_cites_a_document_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(REPO)}:{number}: {line}"
        for path in scanned_files()
        for number, line in citations_in(path)
    ]
    assert not found, "state the fact instead (docs/RAY_FACTS.md for Ray's):\n" + "\n".join(found)
