"""Code that runs inside Ray processes (the Tune driver, Train workers)."""
