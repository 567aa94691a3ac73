"""Write adplace/framework/tf_op_defs.pb: TensorFlow's OpDefs of the op types adplace registers, as one binary OpList.

A development-time tool, run by hand with TensorFlow installed (`python tools/gen_tf_op_defs.py`); adplace reads the
committed file when it writes or reads GraphDefs (framework/graph_io.py), so that attrs are named and typed as TF's
OpDefs require, and never needs TensorFlow itself. Prints the op types TF lacks (adplace-only ops).
"""
from __future__ import annotations

import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUTPUT = ROOT / "adplace" / "framework" / "tf_op_defs.pb"


def main() -> int:
    import adplace  # noqa: F401 - registers every op type
    from adplace.framework.registry import registered_op_types
    from adplace.lib import protos

    import tensorflow  # noqa: F401 - registers TF's op types
    from tensorflow.python.framework import op_def_registry

    op_list = protos.op_def_pb2.OpList()
    missing = []
    for op_type in registered_op_types():
        tf_op_def = op_def_registry.get(op_type)
        if tf_op_def is None:
            missing.append(op_type)
            continue
        op_list.op.add().ParseFromString(tf_op_def.SerializeToString())
    tmp = OUTPUT.with_suffix(".pb.tmp")
    tmp.write_bytes(op_list.SerializeToString(deterministic=True))
    os.replace(tmp, OUTPUT)
    print(f"wrote {len(op_list.op)} OpDefs to {OUTPUT.relative_to(ROOT)} (TensorFlow {tensorflow.__version__})")
    if missing:
        print(f"not in TensorFlow ({len(missing)}): {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
