"""Tool definitions and argument validation: the registry, the schema check, repairs and bounds."""
