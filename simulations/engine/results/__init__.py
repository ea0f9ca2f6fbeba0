"""What a run reports: ``SimulationResult`` (``metrics``), richer SLOs (``slo``), energy (``energy``), the share the
latency model extrapolated (``validity``) and mergeable latency histograms (``sketch``)."""
