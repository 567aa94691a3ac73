"""CRC-32C: google-crc32c's values, and the same values from the table-driven loop used without the extension."""
import subprocess
import sys

import numpy as np
import pytest

from adplace.lib.io import crc


@pytest.mark.parametrize("data", [b"", b"123456789", bytes(range(256)) * 5, np.arange(300, dtype=np.float32)])
def test_the_loop_without_the_extension_gives_the_extensions_values(data, monkeypatch):
    with_extension = crc.crc32c(data)
    continued = crc.crc32c(data, crc.crc32c(b"prefix"))
    monkeypatch.setattr(crc, "_extension", lambda: None)
    assert crc.crc32c(data) == with_extension and crc.crc32c(data, crc.crc32c(b"prefix")) == continued


def test_the_standard_check_value_and_tfs_masking():
    assert crc.crc32c(b"123456789") == 0xE3069283  # CRC-32C's published check value
    assert crc.unmask(crc.mask(0xE3069283)) == 0xE3069283 and crc.mask(0) == 0xA282EAD8


def test_adplace_imports_and_writes_checkpoints_without_google_crc32c(tmp_path):
    """A machine with the source tree and NumPy only (the GPU machines) still imports adplace and saves."""
    script = f"""
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'google_crc32c':
            raise ImportError(name)
sys.meta_path.insert(0, Refuse())
import adplace as tf
from adplace.lib.io import crc
assert crc._extension() is None
v = tf.Variable([1.0, 2.0], name='v')
sess = tf.Session()
sess.run(v.initializer)
path = tf.train.Saver().save(sess, {str(tmp_path / 'ckpt')!r}, write_meta_graph=False)
sess.run(v.assign([0.0, 0.0]))
tf.train.Saver().restore(sess, path)
print(sess.run(v).tolist())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1.0, 2.0]"
