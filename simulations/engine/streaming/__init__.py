"""Streamed replay: one continuous simulation fed chunk by chunk (``stream``), its request window (``window``), the
results accumulated online (``streamacc``) and a multi-day synthetic workload drawn one day at a time
(``dailysynth``)."""
