"""The output sanitiser (``model.visible``) and strict JSON (``model.strict_json``): what
any text from outside raytop becomes before it reaches a terminal or a JSON reader."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from raytop.model.strict_json import TOO_DEEP, dumps, strict
from raytop.model.visible import MAX_LINE, redact, visible, visible_lines
from tests.hostile import HOSTILE_CHARS

hostile_text = st.text(
    st.one_of(st.sampled_from(HOSTILE_CHARS), st.characters(exclude_categories=())), max_size=40
)


def printable_line(text: str) -> bool:
    return "\n" not in text and all(c.isprintable() for c in text)


@given(hostile_text)
def test_whatever_comes_in_one_printable_line_goes_out(text):
    out = visible(text)
    assert printable_line(out)
    out.encode("utf-8")  # a lone surrogate could not even be written to the terminal


@given(hostile_text)
def test_it_is_idempotent(text):
    assert visible(visible(text)) == visible(text)


@given(hostile_text, hostile_text)
def test_names_that_differ_look_different(a, b):
    """An invisible difference (a zero-width space, a bidi override) is made visible:
    two ids that are not equal are never shown alike (backslashes and URIs aside: a
    literal backslash is shown as itself, a credential as ***)."""
    plain = [t for t in (a, b) if "\\" not in t and "://" not in t and "=" not in t]
    if len(plain) == 2 and a != b:
        assert visible(a) != visible(b)


def test_the_issue_reproduction_and_the_escapes_it_shows():
    assert visible("aa_00000\x1b]2;PWNED\x1b\\\x1b[1A") == "aa_00000\\x1b]2;PWNED\\x1b\\\\x1b[1A"
    assert visible("a\nsafe to tear down") == "a\\nsafe to tear down"
    assert visible("x\u202ey\u200bz") == "x\\u202ey\\u200bz"
    assert visible("aa_\ud800") == "aa_\\ud800"
    assert visible("\x9b31m") == "\\x9b31m"
    assert visible("tag\U000e0041") == "tag\\U000e0041"
    assert visible(42) == "42"


def test_printable_text_comes_back_as_the_same_object():
    text = "trial aa_00000 lr=0.01 · 3/5 ✓ 日本"
    assert visible(text) is text


def test_lines_stay_lines_and_a_newline_inside_one_cannot_start_another():
    assert visible_lines(["one", "two\nsafe to tear down"]) == [
        "one",
        "two\\nsafe to tear down",
    ]


def test_credentials_in_a_uri_are_redacted():
    userinfo = "s3://AKIAEXAMPLE:SECRETKEY@bucket/p?endpoint_override=127.0.0.1:1&scheme=http"
    assert redact(userinfo) == "s3://***@bucket/p?endpoint_override=127.0.0.1:1&scheme=http"
    query = "s3://bucket/p?access_key=AKIA&secret_key=SECRET&session_token=TOK&region=x"
    assert redact(query) == "s3://bucket/p?access_key=***&secret_key=***&session_token=***&region=x"
    presigned = "https://h/o?X-Amz-Credential=C&X-Amz-Signature=S&X-Amz-Expires=60"
    assert "=C" not in redact(presigned) and "=S" not in redact(presigned)
    said = f"--storage {userinfo}: unreachable (timed out)"
    assert "SECRETKEY" not in visible(said) and "AKIAEXAMPLE" not in visible(said)
    assert redact("lr=0.01 batch=32") == "lr=0.01 batch=32"


def test_strict_json_has_no_bare_nan_and_says_where_it_was():
    data = {"trials": [{"metrics": {"loss": math.nan, "acc": 0.5}}, {"m": [math.inf, -math.inf]}]}
    out, non_finite = strict(data)
    text = dumps(out)
    json.loads(text, parse_constant=lambda name: pytest_fail(name))
    assert non_finite == {"count": 3, "paths": ["/trials/0/metrics/loss", "/trials/1/m/0",
                                                "/trials/1/m/1"]}  # fmt: skip
    assert out["trials"][0]["metrics"] == {"loss": None, "acc": 0.5}


def pytest_fail(name: str) -> None:
    raise AssertionError(f"bare {name} in the JSON")


@given(hostile_text)
def test_strict_json_text_is_ascii_and_parses_back(text):
    out, _ = strict({text: [text, {"k": text}]})
    dumped = dumps(out)
    assert dumped.isascii() and all(c.isprintable() or c == "\n" for c in dumped)
    assert json.loads(dumped) == out


def test_strict_json_walks_any_depth_without_recursion_and_cuts_past_the_limit():
    deep: list = []
    inner = deep
    for _ in range(50_000):
        inner.append([])
        inner = inner[0]
    out, _ = strict({"deep": deep})
    level = out["deep"]
    for _ in range(62):
        level = level[0]
    assert level == [TOO_DEEP]
    json.loads(dumps(out))


def test_strict_json_redacts_uris_and_keys():
    out, _ = strict({"path": "s3://K:S@b/p", "s3://K2:S2@b": 1})
    assert out == {"path": "s3://***@b/p", "s3://***@b": 1}


def test_a_line_of_megabytes_is_cut_and_says_so():
    out = visible("a" * 5_000_000 + "\x1b")
    assert len(out) <= MAX_LINE and out.endswith("more characters)")
    assert visible(out) == out
