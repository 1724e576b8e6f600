"""``launch.toml_text``: a spec's or NODES.toml's text is measured before tomllib parses
it, so 20,000 nested arrays or a 20,000-part dotted key is one line ("nested too deep")
within a second, not a RecursionError or minutes of parsing; a UTF-8 BOM is accepted."""

from __future__ import annotations

import time

import pytest

from raytop.launch.toml_text import MAX_DEPTH, TomlUnusable, parse_toml, too_deep
from raytop.model.stdlib import tomllib


def depth(value) -> int:
    """How deep the parsed document nests (a table or an array is one level)."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize(
    "text",
    [
        "x = 1",
        "a.b.c = 1",
        "[a.b]\nc.d = [[1, 2], [3]]",
        "x = {a = {b.c = [1.5, 2.5]}}",
        "[[a]]\nb = 1\n[[a]]\nb = 2",
        "[[a.b]]\nc = [{d = 1}]",
        '"a.b".c = 1',
        "x = [\n  [1,  # a comment [[[[\n   [2]],\n]",
        "a = {b = 1, c.d.e = 2}",
        "[tune.scheduler]\nhyperparam_mutations.lr = [0.1, 0.01]",
        # what is inside strings, comments and numbers is not nesting
        'x = "a.b.c.d[[[[{{{{"',
        "x = 'a.b.c.d[[[['",
        'x = """\n[[[[ a.b.c.d\n""" ',
        'x = """a"""""',
        "x = '''\n[[[[.'''",
        "# [[[[ a.b.c.d\nx = 1",
        "x = [1.5, 2.5, 3.5, 4.5, 5.5]",
    ],
)
def test_the_measure_is_the_documents_depth(text):
    """The smallest limit that lets the text through is how deep tomllib nests it."""
    nested = depth(tomllib.loads(text))
    assert not too_deep(text, nested)
    assert too_deep(text, nested - 1)


N = 20_000
DEEP = {
    "arrays": "x = " + "[" * N + "]" * N,
    "inline tables": "x = " + "{a = " * N + "1" + "}" * N,
    "a dotted key": "[p]\n" + ".".join(["a"] * N) + " = 1",
    "a table header": "[" + ".".join(["a"] * N) + "]",
    "a numeric dotted key": "[[" + ".".join(["1"] * N) + "]]",
    "an inline table's key": "x = {" + ".".join(["1"] * N) + " = 1}",
}


@pytest.mark.parametrize("text", DEEP.values(), ids=DEEP.keys())
def test_twenty_thousand_deep_is_one_line_within_a_second(text):
    started = time.monotonic()
    with pytest.raises(TomlUnusable) as err:
        parse_toml(text.encode(), "spec.toml")
    assert time.monotonic() - started < 1.0
    assert str(err.value) == (
        f"spec.toml: nested too deep (more than {MAX_DEPTH} levels of tables, arrays and "
        "dotted keys): not parsed"
    )


def test_the_limit_itself_parses():
    at_limit = "x = " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    assert depth(parse_toml(at_limit.encode(), "spec.toml")) == MAX_DEPTH
    with pytest.raises(TomlUnusable, match="nested too deep"):
        parse_toml(("x = [" + at_limit[4:] + "]").encode(), "spec.toml")


def test_a_byte_order_mark_is_accepted():
    assert parse_toml(b"\xef\xbb\xbf[a]\nb = 1\n", "spec.toml") == {"a": {"b": 1}}


def test_other_problems_keep_their_lines():
    with pytest.raises(TomlUnusable, match=r"^spec.toml: not valid UTF-8 text \(invalid start"):
        parse_toml(b"\xff\xfe", "spec.toml")
    with pytest.raises(
        TomlUnusable, match=r"^n.toml: TOML syntax error: .*\(at line 1, column 8\)$"
    ):
        parse_toml(b"[[nodes]\n", "n.toml")
