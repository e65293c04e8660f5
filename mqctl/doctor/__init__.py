"""`mqctl doctor`: find the Milvus running here, run every MQ check on it, give one verdict.

discovery.py finds the target (/proc, --pid, --sandbox or explicit files and URLs), checks.py calls the
domain for each check, verdict.py holds the findings' model and the verdict.
"""
