"""The package version: a leaf module, so that anything may import it without a cycle."""

__version__ = "0.1.0"
