"""Operator-level autoscaling planner ("From Models to Operators"): per-operator profiles from
Vidur, M/M/R queues with Erlang-C, Alg. 1 greedy scaling, Alg. 2 greedy placement with interference,
energy (Eq. 9), model-level / static P95 / ILP baselines. Django-free; see docs/opscale.md."""
