"""Capacity search, Django-free: the largest load a deployment sustains within the SLOs (goodput), the fewest
instances that meet the SLOs at a required probability over workload seeds, and risk bands over draws.

Every function takes plain values and an ``evaluate`` callable; nothing here imports Django. The Django app
(planner/capacity) persists probes and fans them out to the workers.
"""
