"""Shared test set-up. This folder is on sys.path (pytest's default import mode puts the root
conftest's folder there), so tests can `import op_cases`."""
