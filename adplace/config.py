"""adplace.config: devices (virtual GPUs, listing) and which kernels exist where.

    adplace.config.set_virtual_gpus(2)
    adplace.config.has_kernel("VariableV2", "GPU", adplace.int32)   # False: as in TF, no int32 variables on GPUs
"""
from adplace.devices import list_devices, set_virtual_gpus, virtual_gpu_count
from adplace.framework.registry import has_kernel, kernel_device_types, registered_op_types

__all__ = ["has_kernel", "kernel_device_types", "list_devices", "registered_op_types", "set_virtual_gpus",
           "virtual_gpu_count"]
