"""Where agents run: the MCP server and framework adapters, each behind an optional extra.

Nothing is imported here; each module imports its framework when it is imported itself, and says
which extra to install, and the command that installs it here, when the framework is missing
(`xerj_tools._install`).
"""
