"""Starting things: the run spec, the cluster, the detached Tune driver and its trainable."""
