"""The engine side: one HTTP attempt to XERJ and its rules (body, deadline, retries, nodes, tracing of attempts)."""
