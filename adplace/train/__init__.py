"""adplace.train: device setters now; optimizers and tower helpers build on the gradients layer."""
from adplace.train.device_setter import PS_OPS, STANDARD_PS_OPS, assign_to_device, replica_device_setter

__all__ = ["PS_OPS", "STANDARD_PS_OPS", "assign_to_device", "replica_device_setter"]
