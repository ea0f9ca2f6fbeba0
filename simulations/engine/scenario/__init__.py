"""A scenario parsed once at the boundary: its schema (``schema``), the frozen configuration (``config``), scenario
JSON -> configuration and workload (``scenario``), the run options (``runoptions``) and the input error
(``errors``)."""
