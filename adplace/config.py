"""adplace.config: devices (virtual GPUs, listing) and which kernels exist where.

    adplace.config.set_virtual_gpus(2)
    adplace.config.cuda_gpus()                                     # the real CUDA GPUs CuPy sees (none: why_no_cuda())
    adplace.config.has_kernel("VariableV2", "GPU", adplace.int32)   # False: as in TF, no int32 variables on GPUs
"""
from adplace.devices import cuda_gpus, gpu_memory_info, list_devices, set_virtual_gpus, virtual_gpu_count, why_no_cuda
from adplace.framework.registry import has_kernel, kernel_device_types, registered_op_types

__all__ = ["cuda_gpus", "gpu_memory_info", "has_kernel", "kernel_device_types", "list_devices", "registered_op_types",
           "set_virtual_gpus", "virtual_gpu_count", "why_no_cuda"]
