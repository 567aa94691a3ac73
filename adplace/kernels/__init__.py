"""Kernels: NumPy implementations registered per (op type, device type, dtypes). gpu.py (CuPy) comes later."""
