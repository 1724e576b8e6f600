"""A GCS that refuses raytop for Ray's token authentication is said to, with what to set,
instead of "stopped answering" (``wire.gcs.unanswered``, ``wire.gcs_auth``). Here the
GCS's answer is given (``_refused``); a real cluster's is in
tests/integration/test_token_auth.py."""

from __future__ import annotations

import pytest

from raytop.wire import gcs_auth
from raytop.wire.gcs import unanswered

FAILED = RuntimeError("System error: Failed to connect to GCS.")
TOKEN = "s3cret-value"


@pytest.fixture
def gcs(monkeypatch):
    """Set what the GCS answers (refused or not) and the metadata raytop would send."""

    def given(refused: bool, token: str | None) -> None:
        metadata = (("authorization", f"Bearer {token}"),) if token else ()
        monkeypatch.setattr(gcs_auth, "_token_metadata", lambda: metadata)
        monkeypatch.setattr(gcs_auth, "_refused", lambda address, sent: refused)

    return given


def test_a_refusal_without_a_token_says_to_set_ray_auth_mode(gcs, monkeypatch):
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    gcs(refused=True, token=None)
    text = str(unanswered("10.0.0.5:6379", FAILED, " stopped answering"))
    assert text.startswith("the Ray cluster at 10.0.0.5:6379 requires Ray's token")
    assert "set RAY_AUTH_MODE=token" in text and "stopped answering" not in text


def test_a_refusal_of_the_token_sent_says_it_is_not_the_clusters(gcs, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    gcs(refused=True, token=TOKEN)
    text = str(unanswered("10.0.0.5:6379", FAILED, ": KV read failed"))
    assert "is not the cluster's" in text and "set RAY_AUTH_MODE" not in text
    assert TOKEN not in text  # the token itself is never printed


def test_token_mode_with_no_token_found_says_so(gcs, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    gcs(refused=True, token=None)
    assert "no token was found" in str(unanswered("h:1", FAILED, ""))


def test_a_gcs_that_does_not_refuse_keeps_the_failure_as_it_was(gcs, monkeypatch):
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    gcs(refused=False, token=None)
    text = str(unanswered("10.0.0.5:6379", FAILED, ": KV read failed"))
    assert (
        text
        == "Ray cluster at 10.0.0.5:6379: KV read failed: System error: Failed to connect to GCS."
    )


def test_no_evidence_when_the_gcs_cannot_be_asked():
    assert gcs_auth.auth_refusal("not an address") is None
