"""Graphs of one's own from a `langgraph.json` (issue 44): reading the file, importing the
graphs, handing out a runnable graph per use."""
