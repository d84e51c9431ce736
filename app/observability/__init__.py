"""What an operator sees besides the log: Prometheus metrics (``metrics``) and OpenTelemetry traces (``traces``).

Both are built by the composition root and handed to the pieces they measure; nothing here knows
which features exist.
"""
