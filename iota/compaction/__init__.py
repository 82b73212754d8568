"""Compaction: the context meter and its thresholds (`meter`), and the summary request, its
checks and the words around it (`summary`).

Pure functions over messages, plus one provider call; the actors decide when it runs.
"""
