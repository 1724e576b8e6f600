"""The Ray wire: everything raytop says to Ray, and the names both of its sides agree on.

``probe`` (inside Ray processes) and ``sources`` (raytop's readers, outside the cluster)
both stand on this package and never on each other, so the KV key a probe writes and the
key a reader fetches are one constant, and every private Ray API sits behind one version
check and a check that the installed Ray has it. Modules, by what they hold:

- ``version``: the Ray line the private calls were verified on, and the check.
- ``capabilities``: whether the installed Ray has each private API raytop calls (by what
  it has, not its version), and the warning naming one it lacks.
- ``gcs``: the GCS and its internal KV from outside the cluster (no ``ray.init``);
  ``gcs_tables``: the actor and placement group rows parsed from Ray's protobufs.
- ``cluster_kv``: the same KV store from inside a Ray process.
- ``dashboard``: Ray's dashboard head over HTTP (its address from the KV store): the host
  figures of nodes raytop cannot measure itself.
- ``train_hooks``: Train V2's worker callback classes and what the probe reads in them.
- ``kv_keys``: the KV namespace and every key raytop writes or reads there.
"""
