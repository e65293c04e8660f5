"""This host: its processes as /proc tells them (procfs.py), its TCP ports (ports.py), and the operator's own commands
that stop, start or read Milvus, with the waits around them (hooks.py). A utility: no layer above."""
