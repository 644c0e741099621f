"""The agent loop over a model and a dispatcher: runs, turns, streams and their traces."""
