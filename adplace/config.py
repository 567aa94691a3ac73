"""adplace.config: the device configuration API (virtual GPUs, device listing)."""
from adplace.devices import list_devices, set_virtual_gpus, virtual_gpu_count

__all__ = ["list_devices", "set_virtual_gpus", "virtual_gpu_count"]
