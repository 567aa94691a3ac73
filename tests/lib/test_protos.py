"""Tests for adplace/lib/protos.py (TF's messages from tensorboard, loaded lazily; the tensor-bundle messages declared
with protobuf's descriptor API) and adplace/lib/io/crc.py (CRC-32C and TF's masking)."""
import subprocess
import sys

import numpy as np
import pytest

from adplace.lib import protos
from adplace.lib.io import crc


def test_tensorboard_messages_are_served_by_module_name():
    graph_def = protos.graph_pb2.GraphDef()
    graph_def.node.add(name="a", op="Const")
    assert protos.graph_pb2.GraphDef.FromString(graph_def.SerializeToString()).node[0].name == "a"
    with pytest.raises(AttributeError, match="no attribute 'nonsense_pb2'"):
        protos.nonsense_pb2  # noqa: B018


def test_bundle_entry_has_the_field_numbers_of_tfs_tensor_bundle_proto():
    entry = protos.tensor_bundle_pb2.BundleEntryProto(dtype=protos.types_pb2.DT_FLOAT, shard_id=2, offset=4, size=8,
                                                       crc32c=0xFFFFFFFF)
    entry.shape.dim.add(size=2)
    entry.slices.add().extent.add(start=1, length=2)
    # field 1 varint 1, field 2 shape{dim (2) {size (1) 2}}, field 3 varint 2, field 4 varint 4, field 5 varint 8,
    # field 6 fixed32, field 7 slices{extent{start 1, length 2}}
    assert entry.SerializeToString().hex() == ("0801" "120412020802" "1802" "2004" "2808" "35ffffffff"
                                               "3a060a0408011002")
    header = protos.tensor_bundle_pb2.BundleHeaderProto(num_shards=1, endianness=1)
    header.version.producer = 1
    assert header.SerializeToString().hex() == "080110011a020801"


def test_a_missing_tensorboard_is_reported_with_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard.compat.proto.versions_pb2", None)
    with pytest.raises(ImportError, match=r"pip install 'tensorboard>=2.10'"):
        protos._tensorboard_module("versions_pb2")


def test_importing_adplace_loads_no_protobuf():
    code = "import sys, adplace; print(any(m.startswith(('google.protobuf', 'tensorboard')) for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_crc32c_matches_the_standard_check_value_and_continues():
    assert crc.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert crc.crc32c(b"56789", crc.crc32c(b"1234")) == 0xE3069283
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert crc.crc32c(data) == crc.crc32c(data.tobytes()) == crc.crc32c(bytearray(data.tobytes()))


@pytest.mark.parametrize("value", [0, 1, 0xE3069283, 0xFFFFFFFF, 0xA282EAD8])
def test_masking_is_tfs_and_inverts(value):
    masked = crc.mask(value)
    assert masked == ((((value >> 15) | (value << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF
    assert crc.unmask(masked) == value
