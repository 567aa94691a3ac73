"""Support code below the graph: TF's protocol-buffer messages and TF's file formats (adplace.lib.io)."""
