"""Hatchling metadata hook: pin the eagerflow packages this one depends on to its own version.

Hatchling reads the version from the repository's VERSION file (``[tool.hatch.version]`` in
pyproject.toml) before it runs this hook, so the pins follow that one file. autodiff, graph and
nn each hold an identical copy of this file: a source distribution must contain its hook, so
the three cannot share one file outside their folders (tests/test_version.py keeps them equal).
"""

from typing import Any

from hatchling.metadata.plugin.interface import MetadataHookInterface


class PinSiblingsHook(MetadataHookInterface):
    """``dependencies`` = each name in the hook's ``pin`` option, ``==`` this version."""

    def update(self, metadata: dict[str, Any]) -> None:
        version = metadata["version"]
        metadata["dependencies"] = [f"{name}=={version}" for name in self.config["pin"]]
