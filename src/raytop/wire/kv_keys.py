"""The GCS internal-KV namespace and the keys raytop's two sides agree on.

raytop never joins the cluster as a driver; it and the code inside the cluster talk
through the GCS KV store instead. Each key has one writer and one reader:

- ``ledger/index``, ``ledger/page/<run_id>.<attempt_id>[~<chunk>]`` and
  ``ledger/beat/<run_id>.<attempt_id>[~<chunk>]``: the Ledger actor publishes its index
  (start time, last publish time, each page's and each beat's version) and the keys that
  changed; raytop's ledger reader fetches the index and only the changed keys. An
  attempt's ranks are in pages of ``PAGE_CHUNK_RANKS`` (rank // PAGE_CHUNK_RANKS is the
  chunk; chunk 0 has no suffix), their heartbeat figures (``model.records.BEAT_FIELDS``)
  in beats of ``BEAT_CHUNK_RANKS``, numbered the same way (a Ledger before 2026-12-05
  published them whole, under the name of chunk 0; one before 2026-12-07 made pages of
  32 ranks). A reader takes whatever chunks the index lists: it never works out a rank's
  chunk itself.
- ``ledger/run/<run_id>``: the Ledger publishes each Train run's failure config and
  attempts (``model.records.RunAttempts``, from the RunProbe in the controller); the
  index lists their versions under ``runs``.
- ``cmd/stacks``: raytop asks for stacks (``model.records.StackRequest``); every probe's
  flush thread polls it and answers in its next report.
- ``cmd/flight_recorder``: raytop asks the ranks of a run it launched on GPUs to make
  PyTorch's Flight Recorder dump (``model.records.FlightRecorderRequest``); each probe
  writes to its rank's dump pipe and answers in its next report what happened.
- ``probe/problem/<job id>``: a ReportProbe that cannot count on this Ray files why
  (``model.records.ProbeProblem``); raytop reads it for the job's runs with no report.
- ``trial/<actor id>``: each raytop trial registers its experiment, trial id and placement
  group; raytop's placement reader names the groups' owners from them.
"""

from __future__ import annotations

KV_NAMESPACE = "raytop"

INDEX_KEY = "ledger/index"
PAGE_PREFIX = "ledger/page/"
BEAT_PREFIX = "ledger/beat/"
# Ranks a page chunk holds: a rank's record is its recent history (~3 kB), so a report
# re-sends its chunk's 8 (~22 kB, 0.3 ms of a reader's json.loads), not 32 (~88 kB,
# 1.3 ms; both measured with the benchmark's records, benchmarks/scale_bench.py). Each
# chunk is a KV put of the Ledger's (~0.2 ms of its CPU, measured on Ray 2.60): a round
# in which every rank of 2,000 reports at once is 250 puts, not 63. Beats are in chunks of
# 32: every rank beats each second, so a beat round re-sends every chunk whatever its
# size, and fewer are fewer puts.
PAGE_CHUNK_RANKS = 8
BEAT_CHUNK_RANKS = 32
CHUNK_SEP = "~"
RUN_PREFIX = "ledger/run/"
STACKS_COMMAND_KEY = "cmd/stacks"
FLIGHT_RECORDER_COMMAND_KEY = "cmd/flight_recorder"
TRIAL_PREFIX = "trial/"
PROBE_PROBLEM_PREFIX = "probe/problem/"


def page_key(run_id: str, attempt_id: str) -> str:
    """A ledger page's name (after ``PAGE_PREFIX``): one attempt of one Train run."""
    return f"{run_id}.{attempt_id}"


def chunk_key(key: str, chunk: int) -> str:
    """The name (after ``PAGE_PREFIX`` or ``BEAT_PREFIX``) of chunk ``chunk`` of the
    attempt ``key``: from rank ``chunk * PAGE_CHUNK_RANKS`` of its pages (``chunk *
    BEAT_CHUNK_RANKS`` of its beats) up to the next chunk's first. Chunk 0 is the
    attempt's own name, as ledgers before chunks named a whole page."""
    return key if chunk == 0 else f"{key}{CHUNK_SEP}{chunk}"


def split_chunk_key(name: str) -> tuple[str, int]:
    """``chunk_key``'s inverse: (page key, chunk number); a name with no chunk suffix is
    chunk 0 (and a whole page or beat of a ledger before chunks)."""
    key, sep, n = name.rpartition(CHUNK_SEP)
    return (key, int(n)) if sep and n.isdigit() else (name, 0)
