"""One task of a cluster the TF way: this process starts its server and joins it (until its actor ends).

    python server_process.py '{"ps": ["localhost:2222"], ...}' ps 0      (Ray's address in $ADPLACE_RAY_ADDRESS)
"""
import json
import sys

import adplace as tf

server = tf.train.Server(tf.train.ClusterSpec(json.loads(sys.argv[1])), job_name=sys.argv[2],
                         task_index=int(sys.argv[3]))
print("serving", server.target, flush=True)
server.join()
print("joined", flush=True)
