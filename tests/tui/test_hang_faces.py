"""A hang below the report level as the user meets it: the overview's stall line, the
Run screen's banner with the rank holding the collective up in big digits, and the rank's
own screen saying where its train loop is (the probe's sample)."""

from __future__ import annotations

from raytop.tui.widgets.stall_banner import StallBanner, StallLine

from .helpers import show, text_of
from .test_run import open_run


async def test_the_rank_holding_a_collective_is_named_on_every_screen(
    make_app, collective_hung
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await show(pilot, collective_hung)
        line = app.screen.query_one(StallLine)
        assert line.display and "COLLECTIVE HANG" in str(line.visual)
        screen = await open_run(app, pilot, collective_hung)
        assert screen.query_one(StallBanner).display
        assert text_of(app, "#stall-label") == "HOLDING IT UP"
        message = text_of(app, "#stall-message")
        assert message.startswith("COLLECTIVE HANG")
        assert "rank 1 has been in train_step (loop.py:38) time.sleep(600) for 40s" in message
        assert "rank 1 has not joined it" in message
        await pilot.press("down", "enter")  # rank 1
        await pilot.pause()
        summary = " ".join(str(s.visual) for s in app.screen.query("Static"))
        assert "now in train_step (loop.py:38) time.sleep(600) for 42s" in summary, summary
        assert "HOLDING IT UP" in summary
