"""Parse, print and merge TF1-style device strings (``tf.DeviceSpec``).

Form: ``/job:<name>/replica:<id>/task:<id>/device:<type>:<id>``, all optional.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["DeviceSpec", "DeviceSpecV1", "DeviceSpecV2", "canonical_name", "check_valid", "merge_device",
           "full_name_matches"]

_VALID_DEVICE_TYPES = frozenset({"CPU", "GPU", "TPU", "CUSTOM", "EPU"})
_FIELDS = ("job", "replica", "task", "device_type", "device_index")
_Components = tuple[str | None, int | None, int | None, str | None, int | None]

_STRING_TO_COMPONENTS_CACHE: dict[str, _Components] = {}
_CACHE_LIMIT = 1 << 16


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _device_type_or_none(value: Any) -> str | None:
    # As in TF, only the legacy lower-case spellings are normalised.
    if value in ("cpu", "gpu"):
        return value.upper()
    return _str_or_none(value)


def _parse_int(text: str, spec: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(
            f"invalid literal for int: {text!r} (device spec {spec!r})") from None


def _string_to_components(spec: str) -> _Components:
    """Parse ``spec`` into its five raw components (stateless, cached)."""
    cached = _STRING_TO_COMPONENTS_CACHE.get(spec)
    if cached is not None:
        return cached
    job = device_type = None
    replica = task = device_index = None
    for y in (x.split(":") for x in spec.split("/")):
        ly = len(y)
        if ly == 2 and y[0] == "job":
            job = y[1]
        elif ly == 2 and y[0] == "replica":
            replica = _parse_int(y[1], spec)
        elif ly == 2 and y[0] == "task":
            task = _parse_int(y[1], spec)
        elif ((ly in (1, 2) and y[0].upper() in _VALID_DEVICE_TYPES)
              or (ly == 3 and y[0] == "device")):
            if device_type is not None:
                raise ValueError("Multiple device types are not allowed while "
                                 f"parsing the device spec: {spec}.")
            device_type = _device_type_or_none(y[1]) if ly == 3 else y[0].upper()
            if ly > 1 and y[-1] != "*":
                device_index = _parse_int(y[-1], spec)
        elif y[0] != "":
            raise ValueError(f"Unknown attribute '{y[0]}' is encountered while "
                             f"parsing the device spec: '{spec}'.")
    result = (job, replica, task, device_type, device_index)
    if len(_STRING_TO_COMPONENTS_CACHE) >= _CACHE_LIMIT:
        _STRING_TO_COMPONENTS_CACHE.clear()
    _STRING_TO_COMPONENTS_CACHE[spec] = result
    return result


def _components_to_string(comps: _Components) -> str:
    job, replica, task, device_type, device_index = comps
    named = (("job", job), ("replica", replica), ("task", task))
    parts = [f"/{key}:{value}" for key, value in named if value is not None]
    if device_type is not None:
        index = "*" if device_index is None else device_index
        parts.append(f"/device:{device_type}:{index}")
    return "".join(parts)


def _components_of(spec: Any) -> _Components:
    if spec is None:  # TF parses `spec or ""`: None is the empty spec
        return (None, None, None, None, None)
    if isinstance(spec, DeviceSpecV2):
        return (spec.job, spec.replica, spec.task, spec.device_type,
                spec.device_index)
    if not isinstance(spec, str):
        raise TypeError(
            f"A device spec must be a str or DeviceSpec, got {type(spec).__name__}")
    return _string_to_components(spec)


def _field(name: str, doc: str) -> property:
    """A read-only field of an immutable DeviceSpecV2."""
    attr = "_" + name
    return property(lambda self: getattr(self, attr), doc=doc)


def _settable(name: str, convert: Callable[[Any], Any]) -> property:
    """The same field made settable (DeviceSpecV1): the setter converts and re-caches the string."""
    attr = "_" + name
    base = getattr(DeviceSpecV2, name)

    def fset(self: DeviceSpecV1, value: Any) -> None:
        setattr(self, attr, convert(value))
        self._refresh()

    return base.setter(fset)


class DeviceSpecV2:
    """A (possibly partial) device specification; immutable, like TF2's ``tf.DeviceSpec``.

    >>> DeviceSpecV2(job="ps", device_type="gpu", device_index=0).to_string()
    '/job:ps/device:GPU:0'
    """

    __slots__ = ("_job", "_replica", "_task", "_device_type", "_device_index",
                 "_as_string", "_hash")

    def __init__(self, job: str | None = None, replica: int | None = None,
                 task: int | None = None, device_type: str | None = None,
                 device_index: int | None = None) -> None:
        self._job = _str_or_none(job)
        self._replica = _int_or_none(replica)
        self._task = _int_or_none(task)
        self._device_type = _device_type_or_none(device_type)
        self._device_index = _int_or_none(device_index)
        self._refresh()

    def _refresh(self) -> None:
        self._as_string = _components_to_string(_components_of(self))
        self._hash = hash(self._as_string)

    job = _field("job", "Job name, or None.")
    replica = _field("replica", "Replica index, or None.")
    task = _field("task", "Task index, or None.")
    device_type = _field("device_type", 'Device type such as "CPU" or "GPU", or None.')
    device_index = _field("device_index", "Device index, or None for any index.")

    def to_string(self) -> str:
        """Return the canonical text form.

        >>> DeviceSpec.from_string("/GPU").to_string()  # any index
        '/device:GPU:*'
        """
        return self._as_string

    @classmethod
    def from_string(cls, spec: str | DeviceSpecV2 | None) -> DeviceSpecV2:
        """Build a spec from text (or copy a DeviceSpec; None is the empty spec); raises ValueError.

        >>> DeviceSpec.from_string("/task:1/job:ps").to_string()  # reordered
        '/job:ps/task:1'
        """
        return cls(*_components_of(spec))

    def parse_from_string(self, spec: str | DeviceSpecV2 | None) -> DeviceSpecV2:
        """Return a new spec parsed from ``spec``; this immutable spec is left as it was (TF2 behaviour)."""
        return self.from_string(spec)

    def make_merged_spec(self, dev: DeviceSpecV2) -> DeviceSpecV2:
        """Return a new spec where every set field of ``dev`` wins.

        >>> DeviceSpec(job="ps").make_merged_spec(
        ...     DeviceSpec(device_type="GPU", device_index=1)).to_string()
        '/job:ps/device:GPU:1'
        """
        mine = _components_of(self)
        return type(self)(*(theirs if theirs is not None else own
                            for own, theirs in zip(mine, _components_of(dev))))

    def replace(self, **kwargs: Any) -> DeviceSpecV2:
        """Return a new spec with the given fields replaced (None clears).

        >>> DeviceSpec(job="ps", task=1).replace(task=None).to_string()
        '/job:ps'
        """
        fields = {name: getattr(self, name) for name in _FIELDS}
        fields.update(kwargs)
        return type(self)(**fields)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeviceSpecV2):
            return NotImplemented
        return self._as_string == other._as_string

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELDS)
        return f"<DeviceSpec({args})>"


class DeviceSpecV1(DeviceSpecV2):
    """TF1's ``tf.DeviceSpec``: a DeviceSpecV2 whose fields can be set and which parses and merges in place.

    >>> s = DeviceSpec(job="ps"); s.task = 1; s.to_string()
    '/job:ps/task:1'
    """

    __slots__ = ()

    job = _settable("job", _str_or_none)
    replica = _settable("replica", _int_or_none)
    task = _settable("task", _int_or_none)
    device_type = _settable("device_type", _device_type_or_none)
    device_index = _settable("device_index", _int_or_none)

    def parse_from_string(self, spec: str | DeviceSpecV2 | None) -> DeviceSpecV1:
        """Set every field from ``spec`` (fields it omits become None), as TF 1.14+ does; return self.

        The spec is parsed before anything changes, so an invalid one leaves this spec as it was.

        >>> DeviceSpec(job="ps").parse_from_string("/cpu:0").to_string()  # job cleared
        '/device:CPU:0'
        """
        (self._job, self._replica, self._task, self._device_type,
         self._device_index) = _components_of(spec)
        self._refresh()
        return self

    def merge_from(self, dev: DeviceSpecV2) -> None:
        """Overwrite this spec's fields with the set fields of ``dev``.

        >>> s = DeviceSpec(job="ps", task=0); s.merge_from(DeviceSpec(task=3))
        >>> s.to_string()  # task replaced, job kept
        '/job:ps/task:3'
        """
        for name, value in zip(_FIELDS, _components_of(dev)):
            if value is not None:
                setattr(self, "_" + name, value)
        self._refresh()


DeviceSpec = DeviceSpecV1


@functools.lru_cache(maxsize=4096)
def _canonical_string(spec: str) -> str:
    return DeviceSpec.from_string(spec).to_string()


def canonical_name(device: str | DeviceSpec | None) -> str:
    """Return the canonical text of a device spec ("" for None).

    >>> canonical_name("/job:ps/cpu:0")  # legacy short form expanded
    '/job:ps/device:CPU:0'
    """
    if device is None:
        return ""
    if isinstance(device, DeviceSpecV2):
        return device.to_string()
    return _canonical_string(device)


def check_valid(spec: str) -> None:
    """Raise ValueError when ``spec`` is not a valid device string (tf.python.framework.device.check_valid)."""
    _components_of(spec)


def merge_device(spec: str | DeviceSpec | None) -> Callable[[Any], str]:
    """Return a device function filling an object's unset device fields.

    The object's own ``.device`` fields take precedence over ``spec``; ``None`` or ``""`` merges nothing.

    >>> class Op: device = "/job:worker"
    >>> merge_device("/gpu:0")(Op())  # op's job kept, scope adds the GPU
    '/job:worker/device:GPU:0'
    """
    scope = DeviceSpec.from_string(spec)
    cache: dict[str, str] = {}

    def device_function(op_or_node_def: Any) -> str:
        current = getattr(op_or_node_def, "device", None) or ""
        if isinstance(current, DeviceSpecV2):
            return scope.make_merged_spec(current).to_string()
        merged = cache.get(current)
        if merged is None:
            spec_ = scope.make_merged_spec(DeviceSpec.from_string(current))
            merged = cache[current] = spec_.to_string()
        return merged

    return device_function


def full_name_matches(spec: DeviceSpecV2, job: str, replica: int, task: int,
                      device_type: str, device_index: int) -> bool:
    """Return True when every set field of ``spec`` equals the given value.

    >>> full_name_matches(DeviceSpec(device_type="GPU"), "w", 0, 0, "GPU", 3)
    True
    """
    given = (job, replica, task, device_type, device_index)
    return all(mine is None or mine == value
               for mine, value in zip(_components_of(spec), given))
