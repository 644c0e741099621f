"""Offline validation: tool calls found in recorded model output and validated."""
