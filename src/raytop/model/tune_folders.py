"""Which folders of an experiment folder another Tune run wrote while this one ran.

Ray names a Tune driver's staging folder and its state file to the second, by experiment
name (docs/RAY_FACTS.md#tune-staging-collision): two runs of one name that start in the
same second on one node share that folder, and each run's storage then gets the other's
trial folders and, by name, either one's experiment state. Nothing in the files says so;
what does is a trial folder that no trial of the state names, written after the state's
run started. A folder of an earlier run in the same place is older than that start, and
a folder that is not a trial's (Train's storage, a user's own) has no ``params.json``, so
neither is evidence. Pure: the reader lists, this judges.
"""

from __future__ import annotations

from collections.abc import Iterable

# A folder written within this much before the run's recorded start still counts as
# written while it ran: Tune records its start after the storage is set up.
START_SLACK_S = 5.0
NAME_CHARS = 40  # of the one folder named in the warning


def unnamed_recent(
    state_dirs: frozenset[str] | None,
    folders: Iterable[tuple[str, float | None]],
    started_at: float | None,
) -> list[str]:
    """The folders (name, mtime) that no trial of the state names (``state_dirs``: each
    trial's ``relative_logdir``) and that were written since ``started_at``, sorted. Empty
    without the evidence: a state whose trials' folders are not all known, no start time,
    or folders with no time (object stores); hidden folders (raytop's) never count."""
    if state_dirs is None or started_at is None:
        return []
    since = started_at - START_SLACK_S
    return sorted(
        name
        for name, mtime in folders
        if name not in state_dirs and not name.startswith(".") and mtime is not None
        and mtime >= since
    )  # fmt: skip


def another_run_warning(state_name: str, strangers: list[str], shown: str) -> str:
    """One line on the trial folders of another run (``strangers``; ``shown``: the first
    one's name, already made safe to print)."""
    count = f"{len(strangers)} trial folders" if len(strangers) > 1 else "a trial folder"
    return (
        f"{count} here ({shown}{', …' if len(strangers) > 1 else ''}) belong to no trial of "
        f"{state_name} and were written while its run ran: another Tune run of this name "
        "wrote here (Ray gives runs of one name started in the same second one staging "
        "folder); this folder mixes two runs and its state may be the other's: do not "
        "resume from it"
    )
