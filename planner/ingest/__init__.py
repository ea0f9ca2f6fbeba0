"""Django-free trace ingest: format detection, streaming parsers, normalisation to Parquet,
seeded transforms, characterisation and the workload synthesiser.

Nothing here imports Django; the ``planner.traces`` app persists what these functions return.
"""
