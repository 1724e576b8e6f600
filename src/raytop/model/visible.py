"""The one output sanitiser: text from outside raytop, made safe to show on a terminal.

Trial ids, config keys and values, metric names, folder and file names, checkpoint names,
error lines, stacks: all of it is written by someone else (a colleague's experiment, a
shared bucket, a buggy probe) and would reach the terminal as it is. A terminal obeys
what it is sent: an ESC sequence retitles the pane or moves the cursor over raytop's own
lines, a C1 control (U+009B is a one-byte CSI) does the same, a newline in a trial id
starts a line that reads like raytop's ("safe to tear down: …"), a bidi override
(U+202E) or a zero-width character makes two different ids look the same, and a lone
surrogate (``"\\ud800"``, which JSON allows) cannot even be encoded for the terminal.

So every face passes such text through ``visible`` at its edge, one line at a time:

- every character Python's ``str.isprintable`` refuses (the plain space it accepts) is shown
  as its escape (``\\x1b``, ``\\n``, ``\\u202e``, ``\\ud800``, ``\\U000e0001``): C0 and C1
  controls, DEL, bidi and other format characters, zero-width characters, line and
  paragraph separators, lone surrogates, unassigned code points. Nothing is interpreted,
  and nothing is hidden: an id that differs by an invisible character looks different;
- credentials in a URI are redacted (``redact``): the user info of
  ``s3://KEY:SECRET@bucket`` and the values of query keys that name a secret
  (``secret_key``, ``access_key``, ``session_token``, ``X-Amz-Signature`` …).

A line longer than ``MAX_LINE`` characters is cut, saying how much was left out.
Backslashes are left as they are: a literal ``\\x1b`` typed in a name stays four
visible characters, which is what it is. The result is always one line of printable
text; text that is printable already and names no URI comes back as the same object,
at the cost of one ``isprintable`` call.

Pure and stdlib only (``model`` floor).
"""

from __future__ import annotations

import re

REDACTED = "***"
MAX_LINE = 10_000  # characters of one line shown; the rest is counted, not printed

# ``scheme://userinfo@``: the userinfo (``KEY:SECRET``, or a bare access key) goes.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s]+)@")
# ``?secret_key=…`` / ``&session_token=…``: a query key that names a secret keeps its
# name, loses its value. The words are those pyarrow's and Ray's URIs use for
# credentials, and the presigned-URL ones (AWS ``X-Amz-Signature``, Azure ``sig``).
_SECRET_QUERY = re.compile(
    r"(?P<key>[?&;][^=&#\s]*(?:secret|token|passw|pwd|signature|credential|sig|key)"
    r"[^=&#\s]*=)(?P<value>[^&#\s]+)",
    re.IGNORECASE,
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def could_hold_secret(text: str) -> bool:
    """Cheap pre-check: only a URI's user info or a query can hold a credential."""
    return "://" in text or ("=" in text and ("?" in text or "&" in text or ";" in text))


def redact(text: str) -> str:
    """``text`` with the credentials of any URI in it replaced by ``***``: the user info
    (``s3://***@bucket/p``) and the value of each query key that names a secret
    (``?secret_key=***``). Everything else, the endpoint included, stays."""
    if not could_hold_secret(text):
        return text
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    return _SECRET_QUERY.sub(lambda m: f"{m['key']}{REDACTED}", text)


def visible(text: object) -> str:
    """``text`` (anything: it is ``str``-ed) as one line of printable characters, with
    every other character shown as its escape, any credentials redacted, and at most
    ``MAX_LINE`` characters (a trial id of megabytes would stall the terminal)."""
    line = text if isinstance(text, str) else str(text)
    if not line.isprintable():
        line = "".join(c if c.isprintable() else _escape(c) for c in line)
    line = redact(line)
    if len(line) > MAX_LINE:
        kept = MAX_LINE - 40
        line = f"{line[:kept]}… ({len(line) - kept:,} more characters)"
    return line


def visible_lines(lines: list[str] | tuple[str, ...]) -> list[str]:
    """Each of ``lines`` made ``visible``: a newline inside one cannot start another."""
    return [visible(line) for line in lines]
