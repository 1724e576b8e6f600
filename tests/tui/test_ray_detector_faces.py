"""The Run screen says whether Ray's NCCL hang detector watches the run, before any
verdict, beside raytop's own classification: the pipeline's line, shown as it is."""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Static

from raytop.model.nccl_ras import RayHangDetector
from raytop.pipeline.derive import with_ray_detector

from .helpers import show, text_of
from .test_run import open_run


def with_detector(snapshot, detector: RayHangDetector | None):
    experiment = snapshot.experiments[0]
    run = with_ray_detector(replace(experiment.runs[0], ray_detector=detector))
    return replace(snapshot, experiments=(replace(experiment, runs=(run,)),))


async def test_the_run_screen_shows_the_detector_on_beside_raytops_stall(
    make_app, detector_watched
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_run(app, pilot, detector_watched)
        assert screen.query_one("#run-detector", Static).display
        assert text_of(app, "#run-detector") == (
            "Ray's NCCL hang detector: on (observe, polls every 15s, confirms after 10m00s), "
            "no verdict yet"
        )
        assert "BARRIER STALL" in text_of(app, "#stall-message")  # raytop's own, beside it
        await show(pilot, with_detector(detector_watched, None))  # not known: nothing said
        assert not screen.query_one("#run-detector", Static).display


async def test_a_hostile_version_string_is_shown_made_visible(make_app, stalled) -> None:
    hostile = RayHangDetector("unavailable", "2.59\x1b]2;pwned\x07\x1b[2J")
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await open_run(app, pilot, with_detector(stalled, hostile))
        text = text_of(app, "#run-detector")
        assert text.startswith("Ray's NCCL hang detector: not available on this Ray (2.59")
        assert "\x1b" not in text and "\x07" not in text
