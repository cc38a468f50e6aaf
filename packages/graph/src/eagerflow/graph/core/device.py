"""Device strings, as TensorFlow writes them: ``/job:worker/replica:0/task:1/device:CPU:0``.

A node's ``device`` says where it should run. ``with device("/job:worker/task:1"):`` places
every node made inside; blocks nest the way TensorFlow's do: the inner spec's fields replace
the outer's and the fields it leaves out are kept (``/job:worker`` then ``/task:1`` is
``/job:worker/task:1``), ``device(None)`` clears the placement and ``device("")`` keeps it.

Only the task matters to eagerflow, which runs every op on a CPU: ``task:i`` is the process
of rank i in a launched job, and ``partition`` cuts a graph by it. The other fields are kept
as written so a TensorFlow GraphDef round-trips.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

_JOB = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class DeviceSpec:
    """The parts of a device string, each None when the string leaves it out."""

    job: str | None = None
    replica: int | None = None
    task: int | None = None
    device_type: str | None = None
    device_index: int | None = None

    @classmethod
    def from_string(cls, spec: str) -> DeviceSpec:
        """Parse ``spec`` (``"/job:worker/task:1"``, ``"/device:CPU:0"``, ``"/cpu:0"``);
        a ``ValueError`` names the part that is wrong."""
        if not isinstance(spec, str):
            raise TypeError(f"a device is a string like '/job:worker/task:1', got {spec!r:.60}")
        fields: dict[str, object] = {}
        for part in spec.split("/"):
            if part:
                fields.update(_parse_part(part, spec))
        return cls(**fields)  # type: ignore[arg-type]

    def merged_with(self, inner: DeviceSpec) -> DeviceSpec:
        """``inner``'s fields where it has them, this spec's elsewhere (TensorFlow's
        ``make_merged_spec``, used by nested ``device`` blocks)."""
        kept = {k: v for k, v in vars(inner).items() if v is not None}
        if "device_type" in kept and inner.device_index is None:
            kept["device_index"] = None  # a new device type does not keep the old index
        return replace(self, **kept)

    def to_string(self) -> str:
        """The canonical string (fields in TensorFlow's order; ``""`` for no placement)."""
        parts = []
        if self.job is not None:
            parts.append(f"/job:{self.job}")
        if self.replica is not None:
            parts.append(f"/replica:{self.replica}")
        if self.task is not None:
            parts.append(f"/task:{self.task}")
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            parts.append(f"/device:{self.device_type}:{index}")
        return "".join(parts)


def _number(text: str, what: str, spec: str) -> int:
    if not text.isdigit():
        raise ValueError(f"malformed device {spec!r}: {what} must be a number >= 0, got {text!r}")
    return int(text)


def _parse_part(part: str, spec: str) -> dict[str, object]:
    """One ``/``-separated part of a device string, as DeviceSpec fields."""
    key, _, rest = part.partition(":")
    if key == "job" and _JOB.match(rest):
        return {"job": rest}
    if key in ("replica", "task"):
        return {key: _number(rest, key, spec)}
    if key == "device" or key.lower() in ("cpu", "gpu"):
        device_type, _, index = rest.partition(":") if key == "device" else (key, ":", rest)
        if not _TYPE.match(device_type):
            raise ValueError(f"malformed device {spec!r}: no device type in {part!r}")
        fields: dict[str, object] = {"device_type": device_type.upper()}
        if index not in ("", "*"):
            fields["device_index"] = _number(index, "a device index", spec)
        return fields
    raise ValueError(
        f"malformed device {spec!r}: unknown part {part!r} (expected /job:NAME, /replica:N, "
        "/task:N, /device:TYPE:N or /cpu:N)"
    )


def canonical_device(spec: str | None) -> str:
    """``spec`` parsed and written back canonically (``""`` for None or no placement)."""
    return "" if spec is None else DeviceSpec.from_string(spec).to_string()


def merge_device(outer: str, inner: str | None) -> str:
    """The placement inside ``device(inner)`` within a block placed on ``outer``."""
    if inner is None:
        return ""
    return DeviceSpec.from_string(outer).merged_with(DeviceSpec.from_string(inner)).to_string()


def task_of(device: str) -> int | None:
    """The task index a device string names (None if it names none)."""
    return DeviceSpec.from_string(device).task if device else None


__all__ = ["DeviceSpec", "canonical_device", "merge_device", "task_of"]
