"""Collectors that read the cluster, the ledger, storage and the host into model objects."""
