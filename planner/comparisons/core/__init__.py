"""Django-free core of comparisons: variants, the run adapter, aggregation, figures, exports, PDF report."""
