"""The contestants of benchmarks/speed.py: shared row data and timing (common), hand-written NumPy (numpy_rows), TF1
graphs built through any TF1-style module (graph_rows: adplace in the benchmark's process, TensorFlow in tf_peer.py's),
and JAX (jax_peer.py). TensorFlow and JAX each run in a worker process of their own."""
