"""Capacity optimisation, Django-free: SageServe's hourly ILP and a multi-period cost-optimal plan.

from planner.optimizer import HourlyInputs, solve_hourly
plan = solve_hourly(HourlyInputs(models=[...], regions=[...], gpus=[...], n=..., rho=..., theta=..., alpha=...))
"""

from planner.optimizer.hourly import HourlyInputs, HourlyPlan, planned_demand, solve_hourly
from planner.optimizer.solver import SolveInfo, SolverOptions

__all__ = ["HourlyInputs", "HourlyPlan", "SolveInfo", "SolverOptions", "planned_demand", "solve_hourly"]
