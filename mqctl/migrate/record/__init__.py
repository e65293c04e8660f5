"""What a migration records: its journal (journal.py), the evidence each step leaves in it (evidence.py), and the
one-line summaries of journaled steps for people (report.py)."""
