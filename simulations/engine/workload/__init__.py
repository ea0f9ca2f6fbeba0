"""The request stream: the ``Workload`` arrays (``workload``), the one trace reader (``traceio``), the workload
generator (``generator``), output-length predictors (``predictors``) and context limits (``limits``)."""
