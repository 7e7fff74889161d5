"""Model trace generators for scripts/gen_trace.py (docs/trace-format.md)."""
