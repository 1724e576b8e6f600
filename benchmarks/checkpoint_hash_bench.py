"""What the probe's checkpoint hashing costs a rank (docs/PERFORMANCE.md), without Ray.

1. Hashing the cap: ``HASH_MAX_CHECKPOINT_BYTES`` in files of ``HASH_MAX_FILE_BYTES`` (the
   most the probe hashes of one checkpoint per rank), in one thread: blake2b's throughput
   here, and the longest the end of an upload can wait for it when the upload itself took
   no time.
2. A small replicated checkpoint (one 3.8 KiB ``model.pt``, as Ray's
   ``torch_linear_example`` saves): the probe's whole transfer-hook work (list, hash in
   the calling thread, record), which a SYNC upload pays in the training thread.
3. A checkpoint at the cap uploaded by a local copy (what Train's pyarrow ``copy_files``
   does for local storage): the copy alone vs the copy with the hashing running beside
   it, as ``on_checkpoint_transfer`` runs them; the difference is what the training thread
   pays for the hashes.

    .venv/bin/python benchmarks/checkpoint_hash_bench.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

from raytop.model.records import HASH_MAX_CHECKPOINT_BYTES, HASH_MAX_FILE_BYTES, CheckpointUpload
from raytop.probe.checkpoint_files import FileHasher, list_files, start_upload


def write_folder(root: str, sizes: dict[str, int]) -> str:
    os.makedirs(root, exist_ok=True)
    for name, size in sizes.items():
        with open(os.path.join(root, name), "wb") as f:
            f.write(os.urandom(size))
    return root


def record_of(root: str) -> CheckpointUpload:
    return CheckpointUpload(dir_name="checkpoint", report=1, mode="SYNC", custom_upload=False,
                            files=list_files(root), sync_s=None, start=time.time(), end=None,
                            error=None)  # fmt: skip


def probe_hook(root: str) -> dict[str, str]:
    """The probe's work around one upload with nothing to upload: list, hash, record."""
    upload = start_upload(record_of(root), root)
    upload.ended()
    return upload.record.get("hashes", {})


def copy_upload(root: str, target: str, hashed: bool) -> float:
    shutil.rmtree(target, ignore_errors=True)
    start = time.perf_counter()
    upload = start_upload(record_of(root), root) if hashed else None
    shutil.copytree(root, target)
    if upload is not None:
        upload.ended()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cap-bytes", type=int, default=HASH_MAX_CHECKPOINT_BYTES)
    args = parser.parse_args(argv)
    file_bytes = min(HASH_MAX_FILE_BYTES, args.cap_bytes)
    sizes = {f"shard_{i}.pt": file_bytes for i in range(max(1, args.cap_bytes // file_bytes))}
    with tempfile.TemporaryDirectory() as tmp:
        cap = write_folder(os.path.join(tmp, "cap"), sizes)
        small = write_folder(os.path.join(tmp, "small"), {"model.pt": 3891})
        hash_s, small_s, plain_s, beside_s = [], [], [], []
        for _ in range(args.rounds):
            start = time.perf_counter()
            hasher = FileHasher(cap, list_files(cap))
            hasher._run()  # in this thread: the throughput alone
            hash_s.append(time.perf_counter() - start)
            assert len(hasher.result()) == len(sizes)
            start = time.perf_counter()
            assert probe_hook(small)
            small_s.append(time.perf_counter() - start)
            plain_s.append(copy_upload(cap, os.path.join(tmp, "up"), hashed=False))
            beside_s.append(copy_upload(cap, os.path.join(tmp, "up"), hashed=True))
    total = sum(sizes.values())
    result = {
        "cap_mib": total / 2**20,
        "hash_cap_ms": statistics.median(hash_s) * 1000,
        "hash_mb_per_s": total / statistics.median(hash_s) / 1e6,
        "small_hook_us": statistics.median(small_s) * 1e6,
        "copy_ms": statistics.median(plain_s) * 1000,
        "copy_with_hash_ms": statistics.median(beside_s) * 1000,
    }
    result["added_ms"] = result["copy_with_hash_ms"] - result["copy_ms"]
    for key, value in result.items():
        print(f"{key:>20}: {value:.1f}")
    return result


if __name__ == "__main__":
    main()
