"""ConfigProto, GPUOptions, GraphOptions, RunOptions, RunMetadata...: TF's option messages, TF's own protocol buffers.

The names resolve on first use to the classes of `config_pb2` and `rewriter_config_pb2` (tensorboard's copies of
TF's protos, through adplace.lib.protos), so that `import adplace` does not load protobuf:

    config = options.ConfigProto(allow_soft_placement=True, device_count={"GPU": 0})
    config.gpu_options.allow_growth = True
    options.short_debug_string(config)   # 'device_count { key: "GPU" value: 0 } allow_soft_placement: true ...'
"""
from __future__ import annotations

from adplace.lib import protos

# name -> the protos module defining it (TF's config.proto and rewriter_config.proto)
_MODULE_OF = {name: "config_pb2" for name in (
    "ConfigProto", "GPUOptions", "GraphOptions", "OptimizerOptions", "ThreadPoolOptionProto", "RunOptions",
    "RunMetadata", "CallableOptions", "RPCOptions", "SessionMetadata")}
_MODULE_OF["RewriterConfig"] = "rewriter_config_pb2"
MESSAGE_NAMES = tuple(_MODULE_OF)


def __getattr__(name: str):
    """Resolve a message class on first access (module-level, PEP 562) and keep it as a plain global."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(getattr(protos, module), name)
    globals()[name] = value
    return value


def short_debug_string(message) -> str:
    """`message` on one line, as protobuf's ShortDebugString writes it (TF quotes it in session errors):
    `allow_soft_placement: true gpu_options { allow_growth: true }`."""
    return " ".join(line.strip() for line in str(message).splitlines())  # str() writes map entries whole, as C++
