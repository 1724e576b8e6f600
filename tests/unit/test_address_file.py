"""wire.address_file: Ray's "latest cluster" file is found where Ray writes it, and removed
only when it names the cluster raytop stopped (the real stop: tests/integration/test_faults.py,
the restart test)."""

from __future__ import annotations

from raytop.wire.address_file import address_file, forget


def test_the_file_is_where_ray_writes_it(tmp_path):
    assert address_file({"RAY_TMPDIR": str(tmp_path)}) == tmp_path / "ray" / "ray_current_cluster"
    assert address_file({"TMPDIR": "/scratch"}).parent.parent.name == "scratch"  # Linux's order
    assert str(address_file({})) == "/tmp/ray/ray_current_cluster"


def test_only_a_file_naming_the_stopped_cluster_is_removed(tmp_path):
    current = tmp_path / "ray_current_cluster"
    current.write_text("127.0.0.1:6001")
    assert not forget(current, "127.0.0.1:6002") and current.exists()  # another cluster's
    other = tmp_path / "elsewhere"
    other.write_text("127.0.0.1:6001")
    assert not forget(other, "127.0.0.1:6001") and other.exists()  # not that file
    assert not forget(tmp_path / "missing" / "ray_current_cluster", "127.0.0.1:6001")
    assert forget(current, "127.0.0.1:6001") and not current.exists()
