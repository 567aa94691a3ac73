"""Device discovery: CPU:0 always, CUDA GPUs through CuPy when present, and virtual GPUs.

A virtual GPU is a GPU to the placer (GPU kernels, GPU dtype rules, transfers) but computes with NumPy; virtual GPUs
make every multi-device feature testable without a GPU, and every listing says plainly that they are virtual.

    ADPLACE_VIRTUAL_GPUS=2 adplace devices   # CPU:0, GPU:0 (virtual), GPU:1 (virtual)
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from adplace.framework.device_spec import canonical_name

LOCAL_PREFIX = "/job:localhost/replica:0/task:0"
DEVICE_TYPE_PRIORITY = {"GPU": 210, "CPU": 70}  # TF's device factory priorities: GPU before CPU


@dataclass(frozen=True)
class Device:
    """One local device; `name` is the full TF name, e.g. /job:localhost/replica:0/task:0/device:GPU:0."""

    device_type: str
    index: int
    is_virtual: bool = False
    description: str = ""
    memory_limit_bytes: int = 0
    physical_id: int | None = None
    job: str = "localhost"  # the task that owns the device: /job:localhost/replica:0/task:0 in-process,
    replica: int = 0        # a cluster's /job:ps/replica:0/task:1 on a Ray task (adplace/distributed/)
    task: int = 0

    @property
    def task_name(self) -> str:
        return f"/job:{self.job}/replica:{self.replica}/task:{self.task}"

    @property
    def name(self) -> str:
        if self.job == "localhost" and not self.replica and not self.task:
            return f"{LOCAL_PREFIX}/device:{self.device_type}:{self.index}"
        return f"{self.task_name}/device:{self.device_type}:{self.index}"

    @property
    def is_cuda(self) -> bool:
        """A real CUDA GPU (CuPy computes on it), not the CPU or a virtual GPU."""
        return self.device_type == "GPU" and not self.is_virtual

    @property
    def short_name(self) -> str:
        return f"/device:{self.device_type}:{self.index}"

    def __str__(self) -> str:
        tag = " (virtual)" if self.is_virtual else ""
        return f"{self.name}{tag}"


_virtual_gpus_override: int | None = None


def set_virtual_gpus(count: int | None) -> None:
    """Use `count` virtual GPUs in sessions created from now on (None: back to ADPLACE_VIRTUAL_GPUS)."""
    global _virtual_gpus_override
    if count is not None and (not isinstance(count, int) or count < 0):
        raise ValueError(f"virtual GPU count must be a non-negative int or None, got {count!r}")
    _virtual_gpus_override = count


def virtual_gpu_count() -> int:
    """The configured number of virtual GPUs: set_virtual_gpus(), else $ADPLACE_VIRTUAL_GPUS, else 0."""
    if _virtual_gpus_override is not None:
        return _virtual_gpus_override
    text = os.environ.get("ADPLACE_VIRTUAL_GPUS", "").strip()
    if not text:
        return 0
    try:
        count = int(text)
    except ValueError:
        raise ValueError(f"ADPLACE_VIRTUAL_GPUS must be a non-negative integer, got {text!r}") from None
    if count < 0:
        raise ValueError(f"ADPLACE_VIRTUAL_GPUS must be a non-negative integer, got {text!r}")
    return count


_why_no_cuda = ""


def why_no_cuda() -> str:
    """Why cuda_gpus() found no GPU: CuPy missing, or what CuPy/CUDA said ("" when GPUs were found)."""
    return "" if cuda_gpus() else _why_no_cuda or "no CUDA GPU was found"


@functools.lru_cache(maxsize=1)
def cuda_gpus() -> tuple[Device, ...]:
    """The CUDA GPUs CuPy sees (CUDA_VISIBLE_DEVICES applies); empty without CuPy or without a GPU."""
    global _why_no_cuda
    try:
        import cupy
    except ImportError as e:
        _why_no_cuda = f'CuPy is not installed (pip install "adplace[gpu]" on a machine with an NVIDIA GPU): {e}'
        return ()
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # a CuPy without a driver or a GPU raises its own CUDA errors
        _why_no_cuda = f"CuPy is installed but CUDA reports no usable GPU ({type(e).__name__}: {e})"
        return ()
    _why_no_cuda = "" if count else "CuPy is installed but CUDA reports 0 GPUs"
    gpus = []
    for i in range(count):
        props = cupy.cuda.runtime.getDeviceProperties(i)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        gpus.append(Device("GPU", i, description=f"device: {i}, name: {name}, compute capability: "
                                                 f"{props['major']}.{props['minor']}",
                           memory_limit_bytes=int(props["totalGlobalMem"]), physical_id=i))
    return tuple(gpus)


def local_devices(device_count: dict | None = None, visible_device_list: str = "") -> list[Device]:
    """The devices a session gets: CPU:0, then real GPUs, then virtual GPUs, limited by ConfigProto's options.

    `visible_device_list` ("1,0") selects and renumbers GPUs like CUDA_VISIBLE_DEVICES; `device_count={"GPU": 0}`
    hides every GPU (virtual ones too), and `device_count={"CPU": 2}` gives /device:CPU:0 and /device:CPU:1, as TF's
    thread-pool device factory does (CPU:0 always exists: a count below 1 still gives it).
    """
    gpus = list(cuda_gpus())
    gpus += [Device("GPU", len(gpus) + i, is_virtual=True, description=f"virtual GPU {len(gpus) + i} (NumPy)")
             for i in range(virtual_gpu_count())]
    if visible_device_list:
        try:
            wanted = [int(x) for x in visible_device_list.split(",")]
        except ValueError:
            raise ValueError(f"visible_device_list must be comma-separated GPU ids, got {visible_device_list!r}") \
                from None
        for gpu_id in wanted:
            if not 0 <= gpu_id < len(gpus):
                raise ValueError(f"'visible_device_list' listed an invalid GPU id '{gpu_id}' but visible device "
                                 f"count is {len(gpus)}")
        gpus = [Device("GPU", new, gpus[old].is_virtual, gpus[old].description, gpus[old].memory_limit_bytes,
                       gpus[old].physical_id) for new, old in enumerate(wanted)]
    limits = device_count or {}
    gpus = gpus[:limits.get("GPU", len(gpus))]
    cpus = [Device("CPU", i) for i in range(max(1, limits.get("CPU", 1)))]
    return cpus + gpus


def gpu_memory_info(device: Device) -> tuple[int, int]:
    """(free, total) bytes of a CUDA GPU now, from the driver."""
    import cupy
    with cupy.cuda.Device(device.physical_id):
        free, total = cupy.cuda.runtime.memGetInfo()
    return int(free), int(total)


def list_devices() -> list[Device]:
    """The devices a default session would get."""
    return local_devices()


class DeviceAttributes:
    """One entry of Session.list_devices() (TF's session._DeviceAttributes): the canonical device name, its type,
    memory limit in bytes and incarnation.

        _DeviceAttributes('/job:w/replica:0/task:3/cpu:1', 'CPU', 1337, 7).name   # '.../device:CPU:1'
    """

    __slots__ = ("name", "device_type", "memory_limit_bytes", "incarnation")

    def __init__(self, name: str, device_type: str, memory_limit_bytes: int, incarnation: int):
        self.name = canonical_name(name)
        self.device_type, self.memory_limit_bytes, self.incarnation = device_type, memory_limit_bytes, incarnation

    def __repr__(self) -> str:
        return (f"_DeviceAttributes({self.name}, {self.device_type}, {self.memory_limit_bytes}, "
                f"{self.incarnation})")
