"""Advisory back-test of a past window (Django-free): the recorded replica file, the as-run replay and the
alternatives' deltas and replica timelines."""
