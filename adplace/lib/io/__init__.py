"""TF's file formats and file system: crc32c checksums, TFRecord framing, gfile."""
