"""Real TensorFlow's side of the ClusterSpec interop test, run in a subprocess by tests/tf_peer.py's run_peer:

    tf_cluster_spec_peer.py CASES_FILE

CASES_FILE (JSON) is a list of Python literals, each a cluster dict as tf.train.ClusterSpec takes it (read with
ast.literal_eval: JSON cannot hold int keys). Prints one JSON list, per case what `describe` (shared with
test_cluster_spec.py) reports of TF's ClusterSpec: reprs of its accessors' results or errors, its ClusterDef's bytes.
"""
import ast
import json
import sys


def outcome(call) -> str:
    """repr of call()'s result, or "TypeName: message" of what it raised."""
    try:
        return repr(call())
    except Exception as e:  # noqa: BLE001 - the error is the answer
        return f"{type(e).__name__}: {e}"


def describe(cluster_spec_class, cluster) -> dict:
    """What a ClusterSpec implementation makes of `cluster`: every accessor, round trips, the ClusterDef's bytes."""
    try:
        spec = cluster_spec_class(cluster)
    except Exception as e:  # noqa: BLE001
        return {"error": f"{type(e).__name__}: {e}"}
    jobs = spec.jobs
    result = {"str": str(spec), "as_dict": repr(spec.as_dict()), "jobs": repr(jobs), "bool": bool(spec),
              "cluster_def": spec.as_cluster_def().SerializeToString(deterministic=True).hex(),
              "from_def": repr(cluster_spec_class(spec.as_cluster_def()).as_dict()),
              "from_spec": repr(cluster_spec_class(spec).as_dict()),
              "from_as_dict": cluster_spec_class(spec.as_dict()) == spec,
              "unknown_job": [outcome(lambda m=m: getattr(spec, m)("no_such_job"))
                              for m in ("num_tasks", "task_indices", "job_tasks")],
              "unknown_task": outcome(lambda: spec.task_address(jobs[0], 99)) if jobs else None}
    for job in jobs:
        indices = spec.task_indices(job)
        addresses = repr([spec.task_address(job, i) for i in indices])
        result[f"job {job!r}"] = [spec.num_tasks(job), repr(indices), addresses,
                                  outcome(lambda job=job: spec.job_tasks(job)) if indices else None]
    return result


if __name__ == "__main__":
    import tensorflow as tf

    with open(sys.argv[1]) as f:
        cases = [ast.literal_eval(case) for case in json.load(f)]
    print(json.dumps([describe(tf.train.ClusterSpec, case) for case in cases]))
