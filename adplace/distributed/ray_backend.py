"""Ray, for adplace's clusters: importing it only when a cluster is used, connecting this process to a Ray cluster,
and naming task actors by their cluster address.

    ray = ray_backend.ray_module()         # ImportError naming the extra when Ray is missing
    ray_backend.connect()                   # $ADPLACE_RAY_ADDRESS, a running cluster, or a new local one
    ray_backend.actor_name("localhost:2222")

A new local cluster listens on 127.0.0.1 only. Ray has no authentication: run a multi-machine cluster on a private
network only (README, "Clusters").
"""
from __future__ import annotations

import os
import threading

NAMESPACE = "adplace"
ADDRESS_ENV = "ADPLACE_RAY_ADDRESS"
_lock = threading.Lock()


def ray_module():
    """The `ray` module; ImportError saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError("Clusters need Ray: pip install 'adplace[distributed]'") from exc
    return ray


def connect(address: str | None = None):
    """Connect this process to Ray once: `address`, else $ADPLACE_RAY_ADDRESS, else a new single-node cluster on
    127.0.0.1 (the default for tests and laptops). Returns the ray module."""
    ray = ray_module()
    with _lock:
        if not ray.is_initialized():
            address = address or os.environ.get(ADDRESS_ENV) or None
            options = {"namespace": NAMESPACE, "include_dashboard": False, "log_to_driver": False,
                       "ignore_reinit_error": True}
            if address is None:  # a new cluster of our own, never one that happens to run on this machine
                address = "local"
                options["_node_ip_address"] = "127.0.0.1"
            ray.init(address=address, **options)
    return ray


def actor_name(address: str) -> str:
    """The name of the actor of the task at `address` ("host:port") in the adplace namespace."""
    return f"adplace-task:{address}"


def strip_scheme(target) -> str:
    """"host:port" of a target b"grpc://host:port"."""
    text = target.decode() if isinstance(target, bytes) else str(target)
    return text[len("grpc://"):] if text.startswith("grpc://") else text
