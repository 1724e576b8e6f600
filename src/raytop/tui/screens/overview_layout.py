"""How the overview's body shares its lines between the trials table and the dashboard of
the highlighted trial's run: pure arithmetic over line counts, so the screen stays small
and the rule is one place.

The table takes the rows it needs (its header and a row per trial) and the dashboard the
lines under it; the dashboard stands beside the trials instead only from
``WIDE_COLUMNS`` on, and only when they are too many to stand over it whole (a short
table beside it would leave a blank block under the table). A user saw 12 blank lines
between a 4-trial table and the run panel at 100×30 when the table was given the slack.
"""

from __future__ import annotations

WIDE_COLUMNS = 140  # from this width the dashboard may stand beside the trials
MIN_TRIAL_ROWS = 4  # rows the trials table keeps when the dashboard sits under it
# Lines the dashboard under the trials keeps before the table takes a row more: its phase,
# rank strip, trend, checkpoints and params in their compact forms.
DASHBOARD_LINES = 6


def first_trial_rows(trials: int, body: int) -> int:
    """The table's header and rows before the dashboard under it is filled, in a body of
    ``body`` lines: every trial while the dashboard keeps ``DASHBOARD_LINES`` (and its
    rule), and at least ``MIN_TRIAL_ROWS`` of them."""
    return min(1 + trials, max(1 + MIN_TRIAL_ROWS, body - 1 - DASHBOARD_LINES))


def side_by_side(width: int, trials: int, body: int) -> bool:
    """Whether the dashboard stands beside the trials: from ``WIDE_COLUMNS`` on, when the
    trials standing over it could not all be shown."""
    return width >= WIDE_COLUMNS and first_trial_rows(trials, body) < 1 + trials


def table_height(trials: int, body: int, dashboard: int) -> int:
    """The table's height: the rows it needs, at most what the body leaves it besides the
    ``dashboard``'s lines (0 when the dashboard stands beside it, or is hidden)."""
    return max(1, min(1 + trials, body - dashboard))
