"""The top bar: which cluster, how busy, how fresh; and a banner when it is unreachable."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from raytop.model import Cluster
from raytop.model.format import fmt_value
from raytop.tui.format import shown


def describe_cluster(cluster: Cluster | None) -> Content:
    if cluster is None:
        return Content("waiting for the first snapshot…")
    if cluster.history_only:  # no cluster on purpose: say so, not as a fault
        return Content.styled(cluster.error or "no cluster: history from storage", "$accent")
    parts: list[Content | str] = [Content.styled(cluster.address or "local", "bold")]
    if cluster.embedded:
        parts.append(Content.styled(" embedded", "$accent"))
    alive, known = cluster.alive_nodes, len(cluster.nodes)
    count = f"{alive}/{known}" if alive != known else str(alive)
    noun = "node" if known == 1 else "nodes"
    parts.append(f" · {count} {noun} alive")
    for resource in ("CPU", "GPU"):
        used, total = fmt_value(cluster.used(resource)), fmt_value(cluster.total(resource))
        parts.append(f" · {resource} {used}/{total}")
    if cluster.ray_version:
        parts.append(f" · ray {cluster.ray_version}")
    if cluster.ray_unsupported:
        parts.append(Content.styled(" (unsupported line)", "bold $warning"))
    return Content.assemble(*parts)


class ClusterBar(Widget):
    """Shows a ``Cluster``; the ``-disconnected`` class reveals the warning banner."""

    def compose(self) -> ComposeResult:
        yield Static(id="banner")
        with Horizontal(id="cluster-line"):
            yield Static(id="cluster")
            yield Static(id="age")

    def show(self, cluster: Cluster | None, problem: str | None) -> None:
        self.set_class(problem is not None, "-disconnected")
        if problem is not None:
            banner = Content.assemble("DISCONNECTED — ", problem, " — retrying")
            self.query_one("#banner", Static).update(shown(banner))
        self.query_one("#cluster", Static).update(shown(describe_cluster(cluster)))

    def show_age(self, text: str) -> None:
        self.query_one("#age", Static).update(shown(text))
