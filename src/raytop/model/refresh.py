"""How often a face asks the collector for a new snapshot: one default and one pacing rule.

The TUI's poller and ``run --no-tui``'s follow loop both refresh every ``--refresh``
seconds, starting from ``DEFAULT_REFRESH_S``, and both wait at least as long as the last
collect took (``paced_delay``), so neither doubles the load on a cluster that answers
slowly. Here, below every face, so the option and its users cannot drift apart.
"""

from __future__ import annotations

# ``--refresh``'s default: at it, a rank's report is on the TUI within p95 0.4 s, under the
# 0.5 s target (docs/PERFORMANCE.md, "Report ledger"); slower links pass --refresh 5.
DEFAULT_REFRESH_S = 0.25


def paced_delay(refresh_s: float, took_s: float) -> tuple[float, str | None]:
    """Seconds to wait after a collect that took ``took_s``, and one line saying so when
    that is longer than asked: never less than the collect itself took, so a cluster that
    answers slowly is asked at most half the time (its reads are the load), and the user
    sees why the data refreshes less often than ``--refresh``."""
    if took_s <= refresh_s:
        return refresh_s, None
    return took_s, f"slow cluster: refresh {2 * took_s:.1f}s"


# What moves with the clock alone moves once a second: a group's age (since it was
# created), the beats read, and a run's judged waits (as of the ledger's publish), each at
# the first refresh in a new second (``same_second``). Until then a source hands out what
# it made, the very objects, and what is made of them downstream is kept too. (A run's
# ranks carry times, not ages: their states move only when a threshold is crossed,
# ``pipeline.derive.derived_run``.) docs/PERFORMANCE.md, issue 25.
AGES_EVERY_S = 1.0


def same_second(a: float, b: float) -> bool:
    """Whether wall-clock times ``a`` and ``b`` (unix s) fall in the same second, so that
    ages made at ``b`` stand at ``a``."""
    return a // AGES_EVERY_S == b // AGES_EVERY_S
