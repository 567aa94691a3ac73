"""The runtime: sessions, compiled plans and their execution."""
