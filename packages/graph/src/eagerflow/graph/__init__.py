"""eagerflow.graph: not written yet (see the project's issue for this package)."""
