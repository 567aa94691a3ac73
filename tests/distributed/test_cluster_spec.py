"""tf.train.ClusterSpec: TF 1.15's semantics (dense and sparse jobs, the ClusterDef proto, accessors, equality, TF's
errors), adplace's address checks, and a comparison with real TensorFlow's ClusterSpec run in a subprocess."""
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

import adplace as tf
from adplace.lib import protos
from tf_peer import needs_tf, run_peer

PEER = Path(__file__).with_name("tf_cluster_spec_peer.py")
_peer_spec = importlib.util.spec_from_file_location("tf_cluster_spec_peer", PEER)
peer = importlib.util.module_from_spec(_peer_spec)
_peer_spec.loader.exec_module(peer)

MIXED = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["worker0:2222", "worker1:2222", "worker2:2222"],
         "sparse": {0: "sparse0:2222", 3: "sparse3:2222"}}


def cluster_def(text_jobs: dict):
    """A ClusterDef with the jobs of {name: {index: address}}, in that order."""
    proto = protos.cluster_pb2.ClusterDef()
    for name, tasks in text_jobs.items():
        job = proto.job.add(name=name)
        for index, address in tasks.items():
            job.tasks[index] = address
    return proto


# --- construction and accessors ------------------------------------------------------------------------------------

def test_exported_as_tf_train_cluster_spec_with_its_protos():
    assert tf.train.ClusterSpec is tf.distributed.ClusterSpec
    assert tf.train.ClusterDef is protos.cluster_pb2.ClusterDef
    assert tf.train.JobDef is protos.cluster_pb2.JobDef


def test_accessors_of_dense_and_sparse_jobs():
    spec = tf.train.ClusterSpec(MIXED)
    assert spec.as_dict() == MIXED
    assert spec.jobs == ["ps", "worker", "sparse"]
    assert [spec.num_tasks(j) for j in spec.jobs] == [2, 3, 2]
    assert spec.task_indices("sparse") == [0, 3]
    assert spec.task_indices("worker") == [0, 1, 2]
    assert spec.task_address("ps", 1) == "ps1:2222"
    assert spec.task_address("sparse", 3) == "sparse3:2222"
    assert spec.job_tasks("worker") == MIXED["worker"]
    assert spec.job_tasks("sparse") == ["sparse0:2222", None, None, "sparse3:2222"]


def test_as_dict_is_a_list_exactly_when_indices_are_dense():
    spec = tf.train.ClusterSpec({"a": {1: "h:1", 0: "h:2"}, "b": {1: "h:3"}, "c": [], "d": {}})
    assert spec.as_dict() == {"a": ["h:2", "h:1"], "b": {1: "h:3"}, "c": {}, "d": {}}
    assert isinstance(spec.as_dict()["a"], list) and isinstance(spec.as_dict()["b"], dict)


def test_tuples_and_numpy_indices_are_accepted():
    spec = tf.train.ClusterSpec({"w": ("h:1", "h:2"), "s": {np.int64(4): "h:3"}})
    assert spec.as_dict() == {"w": ["h:1", "h:2"], "s": {4: "h:3"}}
    assert type(spec.task_indices("s")[0]) is int


def test_job_with_no_tasks():
    spec = tf.train.ClusterSpec({"ps": ["ps0:2222"], "worker": []})
    assert spec.num_tasks("worker") == 0
    assert spec.task_indices("worker") == []
    assert spec.job_tasks("worker") == []      # TF raises max()'s ValueError here
    assert [job.name for job in spec.as_cluster_def().job] == ["ps", "worker"]
    assert not spec.as_cluster_def().job[1].tasks


def test_unknown_job_and_task_errors_are_tfs():
    spec = tf.train.ClusterSpec(MIXED)
    for method in (spec.num_tasks, spec.task_indices, spec.job_tasks):
        with pytest.raises(ValueError, match=r"^No such job in cluster: 'unknown'$"):
            method("unknown")
    with pytest.raises(ValueError, match=r"^No such job in cluster: 'unknown'$"):
        spec.task_address("unknown", 0)
    with pytest.raises(ValueError, match=r"^No task with index 2 in job 'sparse'$"):
        spec.task_address("sparse", 2)


def test_cluster_def_sorts_jobs_and_tasks():
    spec = tf.train.ClusterSpec({"worker": {2: "w2:1", 0: "w0:1"}, "ps": ["p:1"]})
    assert spec.as_cluster_def() == cluster_def({"ps": {0: "p:1"}, "worker": {0: "w0:1", 2: "w2:1"}})
    assert spec.jobs == ["worker", "ps"]    # jobs keep the dict's order; the proto sorts them


@pytest.mark.parametrize("source", ["cluster_def", "cluster_spec", "as_dict"])
def test_round_trips(source):
    original = tf.train.ClusterSpec(MIXED)
    arg = {"cluster_def": original.as_cluster_def(), "cluster_spec": original, "as_dict": original.as_dict()}[source]
    copy = tf.train.ClusterSpec(arg)
    assert copy == original
    assert copy.as_dict() == MIXED
    assert copy.as_cluster_def() == original.as_cluster_def()


def test_from_cluster_def_keeps_its_job_order_and_is_a_copy():
    proto = cluster_def({"worker": {0: "w:1"}, "ps": {1: "p:1"}})
    spec = tf.train.ClusterSpec(proto)
    assert spec.jobs == ["worker", "ps"]
    proto.job[0].tasks[0] = "changed:1"
    spec.as_cluster_def().job[0].tasks[0] = "changed:2"
    assert spec.task_address("worker", 0) == "w:1"
    assert spec.as_cluster_def().job[0].tasks[0] == "w:1"


def test_real_tensorflow_cluster_def_is_read_through_its_bytes():
    """A message named tensorflow.ClusterDef (TF's own class, declared here in a private pool) is accepted."""
    F = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="tensorflow/core/protobuf/cluster.proto", package="tensorflow",
                                              syntax="proto3")
    job = file.message_type.add(name="JobDef")
    entry = job.nested_type.add(name="TasksEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    job.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    job.field.add(name="tasks", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                  type_name=".tensorflow.JobDef.TasksEntry")
    cluster = file.message_type.add(name="ClusterDef")
    cluster.field.add(name="job", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED, type_name=".tensorflow.JobDef")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    tf_cluster_def = message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.ClusterDef"))()
    tf_job = tf_cluster_def.job.add(name="worker")
    tf_job.tasks[5] = "w5:2222"
    assert tf.train.ClusterSpec(tf_cluster_def).as_dict() == {"worker": {5: "w5:2222"}}


def test_bool_eq_ne_and_hash():
    assert not tf.train.ClusterSpec({})
    assert tf.train.ClusterSpec({"job": ["host:2222"]})
    assert tf.train.ClusterSpec({}) == tf.train.ClusterSpec({})
    assert tf.train.ClusterSpec({"job": {0: "host:2222"}}) == tf.train.ClusterSpec({"job": ["host:2222"]})
    assert tf.train.ClusterSpec({"job": ["host:2222"]}) == {"job": {0: "host:2222"}}   # as TF: the task dicts
    unequal = [({}, {"job": ["host:2223"]}), ({"job1": ["host:2222"]}, {"job2": ["host:2222"]}),
               ({"job": ["host:2222"]}, {"job": ["host:2223"]}),
               ({"job": ["host:2222", "host:2223"]}, {"job": ["host:2223", "host:2222"]})]
    for a, b in unequal:
        assert tf.train.ClusterSpec(a) != tf.train.ClusterSpec(b)
        assert not tf.train.ClusterSpec(a) == tf.train.ClusterSpec(b)
    assert not tf.train.ClusterSpec({"job": ["host:2222"]}) != tf.train.ClusterSpec({"job": {0: "host:2222"}})
    with pytest.raises(TypeError):
        hash(tf.train.ClusterSpec({}))


def test_str_and_repr_sort_jobs():
    spec = tf.train.ClusterSpec({"worker": ["worker0:3333", "worker1:4444"], "ps": ["ps0:1111"], "s": {2: "s:1"}})
    expected = "ClusterSpec({'ps': ['ps0:1111'], 's': {2: 's:1'}, 'worker': ['worker0:3333', 'worker1:4444']})"
    assert str(spec) == repr(spec) == expected


# --- TF's type errors ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cluster, message", [
    (["ps0:1"], r"^`cluster` must be a dictionary mapping one or more job names to lists of network addresses, or a "
                r"`ClusterDef` protocol buffer$"),
    ("ps0:1", r"^`cluster` must be a dictionary"),
    ({"ps": "ps0:1"}, r"^The tasks for job 'ps' must be a list or a dictionary from integers to strings\.$"),
    ({3: ["ps0:1"]}, r"^Job name 3 must be bytes or unicode$"),
    ({"ps": [2222]}, r"^Task address 2222 must be bytes or unicode$"),
    ({"ps": {"0": "ps0:1"}}, r"^Task index '0' of job 'ps' must be an integer$"),
    ({"ps": {True: "ps0:1"}}, r"^Task index True of job 'ps' must be an integer$"),
])
def test_type_errors(cluster, message):
    with pytest.raises(TypeError, match=message):
        tf.train.ClusterSpec(cluster)


# --- adplace's checks ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("address, why", [
    ("worker0", "has no port"),
    (":2222", "has no host"),
    ("worker0:", "has port ''"),
    ("worker0:0", "has port '0'"),
    ("worker0:65536", "has port '65536'"),
    ("worker0:-1", "has port '-1'"),
    ("worker0:22x", "has port '22x'"),
    ("worker0:٣٣", "has port '٣٣'"),
    ("grpc://worker0:2222", "has a scheme"),
    ("worker 0:2222", "contains whitespace"),
    (" worker0:2222", "contains whitespace"),
    ("worker0:2222\n", "contains whitespace"),
    ("host/path:2222", "has a '/' in its host"),
    ("::1:2222", "write IPv6 hosts in brackets"),
    ("[]:2222", "malformed bracketed host"),
    ("[::1:2222", "write IPv6 hosts in brackets"),
])
def test_malformed_address_names_job_and_task(address, why):
    expected = "^" + re.escape(f"Address {address!r} of task 3 in job 'worker' ") + ".*" + re.escape(why)
    with pytest.raises(ValueError, match=expected):
        tf.train.ClusterSpec({"ps": ["ps0:2222"], "worker": {3: address}})


@pytest.mark.parametrize("address", ["worker0:1", "w.example.com:65535", "10.0.0.1:2222", "[::1]:2222",
                                     "[fe80::1%eth0]:80", "localhost:02222", "under_score-host:8"])
def test_well_formed_addresses(address):
    assert tf.train.ClusterSpec({"w": [address]}).task_address("w", 0) == address


def test_bytes_addresses_and_job_names_are_checked_decoded():
    spec = tf.train.ClusterSpec({b"w": [b"h:1"]})
    assert spec.as_cluster_def() == cluster_def({"w": {0: "h:1"}})
    with pytest.raises(ValueError, match=r"^Address 'h' of task 0 in job b'w' has no port"):
        tf.train.ClusterSpec({b"w": [b"h"]})


@pytest.mark.parametrize("cluster, message", [
    ({"ps": ["h:2222"], "worker": ["w:1", "h:2222"]},
     r"^Address 'h:2222' of task 1 in job 'worker' is also the address of task 0 in job 'ps'"),
    ({"worker": {0: "w:1", 5: "w:1"}}, r"^Address 'w:1' of task 5 in job 'worker' is also the address of task 0 "
                                       r"in job 'worker'"),
    ({"a": ["Host.Example.com:80"], "b": ["host.example.COM:080"]},
     r"^Address 'host.example.COM:080' of task 0 in job 'b' is also the address of task 0 in job 'a'"),
])
def test_duplicate_addresses(cluster, message):
    with pytest.raises(ValueError, match=message):
        tf.train.ClusterSpec(cluster)


def test_task_index_range():
    with pytest.raises(ValueError, match=r"^Task index -1 of job 'w' must be in 0\.\.2147483647$"):
        tf.train.ClusterSpec({"w": {-1: "h:1"}})
    with pytest.raises(ValueError, match=r"^Task index 2147483648 of job 'w' must be in 0\.\.2147483647$"):
        tf.train.ClusterSpec({"w": {2**31: "h:1"}})
    assert tf.train.ClusterSpec({"w": {2**31 - 1: "h:1"}}).task_indices("w") == [2**31 - 1]


def test_cluster_defs_are_checked_too():
    with pytest.raises(ValueError, match=r"^Address 'bad' of task 0 in job 'w' has no port"):
        tf.train.ClusterSpec(cluster_def({"w": {0: "bad"}}))
    with pytest.raises(ValueError, match=r"^Task index -2 of job 'w'"):
        tf.train.ClusterSpec(cluster_def({"w": {-2: "h:1"}}))
    with pytest.raises(ValueError, match=r"^Address 'h:1' of task 1 in job 'w' is also the address of task 0"):
        tf.train.ClusterSpec(cluster_def({"w": {0: "h:1", 1: "h:1"}}))
    twice = cluster_def({"w": {0: "h:1"}})
    twice.job.add(name="w").tasks[1] = "h:2"
    with pytest.raises(ValueError, match=r"^Job 'w' appears more than once in the ClusterDef$"):
        tf.train.ClusterSpec(twice)


def test_imports_without_ray_or_tensorflow():
    code = ("import sys; import adplace as tf; tf.train.ClusterSpec({'w': ['h:1']}).as_cluster_def(); "
            "print(sorted(m for m in ('ray', 'tensorflow') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


# --- real TensorFlow -----------------------------------------------------------------------------------------------

PEER_CASES = [
    {"ps": ["ps0:1111"], "worker": ["worker0:3333", "worker1:4444"]},
    {"ps": ["ps0:2222", "ps1:2222"], "worker": []},
    MIXED,
    {},
    {"local": {37: "localhost:2222"}},
    {"worker": ("a:1", "b:2"), "chief": {0: "c:1"}},
    {"zeta": {2: "x:3", 0: "y:4"}, "alpha": {1: "p:5", 0: "q:6"}},
    {"wörker": ["[::1]:2222", "h.example.com:65535"]},
    {b"w": [b"h:1"], b"v": {1: b"g:2"}},
    {b"w": [b"h:1"], "v": ["g:2"]},   # TypeError from sorting bytes with str job names, in TF too
    ["ps0:1"],
    {"ps": "ps0:1"},
    {3: ["ps0:1"]},
    {"ps": [2222]},
]


@needs_tf
def test_matches_real_tensorflow(tmp_path):
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([repr(case) for case in PEER_CASES]))
    theirs = json.loads(run_peer(PEER, cases))
    ours = json.loads(json.dumps([peer.describe(tf.train.ClusterSpec, case) for case in PEER_CASES]))
    assert len(theirs) == len(PEER_CASES)
    for case, mine, tfs in zip(PEER_CASES, ours, theirs):
        assert mine == tfs, case
    assert theirs[2]["cluster_def"] and "error" in theirs[-1]   # the comparison covered protos and errors
