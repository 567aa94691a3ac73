"""tf.train.ClusterSpec: the jobs of a cluster and the network address of each of their tasks, with TF 1.15's
semantics (dense jobs as lists, sparse ones as {task index: address}, the ClusterDef proto, TF's errors).

adplace checks more than TF does, at construction, because a bad address would otherwise surface only when a Ray task
fails to bind: every address must be host:port (a non-empty host without spaces, slashes or a scheme, IPv6 hosts in
brackets; a port in 1..65535), no two tasks may share an address, task indices are integers in 0..2**31-1 (a
ClusterDef's int32 keys), and a ClusterDef names each job once. Each of these is a ValueError (TypeError for a value
of the wrong type) naming the job and task at fault. Importing this module needs neither Ray nor TensorFlow.
"""
from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any, Union

from adplace.lib import protos

_MAX_TASK_INDEX = 2**31 - 1   # JobDef.tasks is a map<int32, string>
_TF_CLUSTER_DEF = "tensorflow.ClusterDef"  # real TensorFlow's message, accepted through its bytes


def _text(value: Any, error: str) -> str:
    """`value` as the str TF's compat.as_bytes would store in the proto; TypeError(`error`) for other types."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8")
    raise TypeError(error)


def _task_index(index: Any, job: Any) -> int:
    """A task index as a Python int (numpy integers included); TypeError or ValueError naming the job otherwise."""
    if isinstance(index, bool):
        raise TypeError(f"Task index {index!r} of job {job!r} must be an integer")
    try:
        index = operator.index(index)
    except TypeError:
        raise TypeError(f"Task index {index!r} of job {job!r} must be an integer") from None
    if not 0 <= index <= _MAX_TASK_INDEX:
        raise ValueError(f"Task index {index} of job {job!r} must be in 0..{_MAX_TASK_INDEX}")
    return index


def _address_problem(address: str) -> str | None:
    """Why `address` is not host:port, or None when it is."""
    if "://" in address:
        return "has a scheme; give host:port only"
    if any(c.isspace() for c in address):
        return "contains whitespace"
    host, colon, port = address.rpartition(":")
    if not colon:
        return "has no port (expected host:port)"
    if not host:
        return "has no host (expected host:port)"
    if "/" in host:
        return "has a '/' in its host"
    bracketed = host.startswith("[") and host.endswith("]")
    if bracketed and (len(host) == 2 or "[" in host[1:-1] or "]" in host[1:-1]):
        return "has an empty or malformed bracketed host"
    if not bracketed and any(c in host for c in ":[]"):
        return "has a ':' or bracket in its host (write IPv6 hosts in brackets: [::1]:2222)"
    if not (port.isascii() and port.isdigit()) or not 1 <= int(port) <= 65535:
        return f"has port {port!r}, not an integer in 1..65535"
    return None


def _check_addresses(spec: dict) -> None:
    """ValueError naming the job and task of the first malformed or repeated address of `spec`."""
    seen: dict[str, tuple] = {}
    for job, tasks in spec.items():
        for index in sorted(tasks):
            address = _text(tasks[index], f"Task address {tasks[index]!r} must be bytes or unicode")
            problem = _address_problem(address)
            if problem:
                raise ValueError(f"Address {address!r} of task {index} in job {job!r} {problem}")
            host, _, port = address.rpartition(":")
            key = f"{host.lower()}:{int(port)}"   # host names are case-insensitive; "02222" is port 2222
            if key in seen:
                other_job, other_index = seen[key]
                raise ValueError(f"Address {address!r} of task {index} in job {job!r} is also the address of task "
                                 f"{other_index} in job {other_job!r}: each task needs its own host:port")
            seen[key] = (job, index)


def _job_tasks(job: Any, tasks: Any) -> dict:
    """The {task index: address} of one job of a dict-built spec; TF's TypeError for tasks of the wrong type."""
    if isinstance(tasks, (list, tuple)):
        return dict(enumerate(tasks))
    if isinstance(tasks, Mapping):
        return {_task_index(i, job): address for i, address in tasks.items()}
    raise TypeError(f"The tasks for job {job!r} must be a list or a dictionary from integers to strings.")


def _cluster_def_of(spec: dict):
    """The ClusterDef of a {job: {task index: address}} spec, jobs sorted by name as TF sorts them (deterministic)."""
    cluster_def = protos.cluster_pb2.ClusterDef()
    for job, tasks in sorted(spec.items()):
        job_def = cluster_def.job.add(name=_text(job, f"Job name {job!r} must be bytes or unicode"))
        for index, address in sorted(tasks.items()):
            job_def.tasks[index] = _text(address, f"Task address {address!r} must be bytes or unicode")
    return cluster_def


def _spec_of(cluster_def) -> dict:
    """The {job: {task index: address}} of a ClusterDef; ValueError for a job it names twice or a negative index."""
    spec: dict = {}
    for job_def in cluster_def.job:
        if job_def.name in spec:
            raise ValueError(f"Job {job_def.name!r} appears more than once in the ClusterDef")
        spec[job_def.name] = {_task_index(i, job_def.name): t for i, t in job_def.tasks.items()}
    return spec


class ClusterSpec:
    """A cluster as a set of tasks organized into jobs, each task with its network address (host:port).

        tf.train.ClusterSpec({"worker": ["w0.example.com:2222", "w1.example.com:2222"],
                              "ps": {1: "ps1.example.com:2222"}})   # a sparse job: only task 1 is known

    Built from a dict of job name -> list of addresses (task i at position i) or {task index: address}, from another
    ClusterSpec, or from a ClusterDef proto (adplace's `tf.train.ClusterDef` or real TensorFlow's). Immutable.
    """

    def __init__(self, cluster: Union[Mapping, "ClusterSpec", Any]) -> None:
        if isinstance(cluster, Mapping):
            spec = {job: _job_tasks(job, tasks) for job, tasks in cluster.items()}
            cluster_def = _cluster_def_of(spec)
        elif isinstance(cluster, ClusterSpec):
            cluster_def = cluster.as_cluster_def()
            spec = _spec_of(cluster_def)
        elif isinstance(cluster, protos.cluster_pb2.ClusterDef):
            cluster_def = protos.cluster_pb2.ClusterDef()
            cluster_def.CopyFrom(cluster)
            spec = _spec_of(cluster_def)
        elif getattr(getattr(cluster, "DESCRIPTOR", None), "full_name", None) == _TF_CLUSTER_DEF:
            cluster_def = protos.cluster_pb2.ClusterDef.FromString(cluster.SerializeToString())
            spec = _spec_of(cluster_def)
        else:
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to lists of network "
                            "addresses, or a `ClusterDef` protocol buffer")
        _check_addresses(spec)
        self._cluster_spec = spec
        self._cluster_def = cluster_def

    def __bool__(self) -> bool:
        return bool(self._cluster_spec)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ClusterSpec):
            return self._cluster_spec == other._cluster_spec
        return self._cluster_spec == other

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # equality by content, as in TF, whose ClusterSpecs are unhashable too

    def __repr__(self) -> str:
        jobs = self.as_dict()
        return "ClusterSpec({" + ", ".join(f"{job!r}: {jobs[job]!r}" for job in sorted(jobs)) + "})"

    def as_dict(self) -> dict:
        """{job: list of addresses} for jobs whose task indices are 0..n-1, {job: {task index: address}} otherwise."""
        result = {}
        for job, tasks in self._cluster_spec.items():
            dense = len(tasks) > 0 and max(tasks) + 1 == len(tasks)
            result[job] = self.job_tasks(job) if dense else {i: tasks[i] for i in sorted(tasks)}
        return result

    def as_cluster_def(self):
        """The cluster as a `tf.train.ClusterDef` proto (a copy: changing it leaves this ClusterSpec as it was)."""
        cluster_def = protos.cluster_pb2.ClusterDef()
        cluster_def.CopyFrom(self._cluster_def)
        return cluster_def

    @property
    def jobs(self) -> list:
        """The names of the jobs of this cluster."""
        return list(self._cluster_spec)

    def _tasks(self, job_name: Any) -> dict:
        try:
            return self._cluster_spec[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None

    def num_tasks(self, job_name: Any) -> int:
        """How many tasks `job_name` defines; ValueError if the cluster has no such job."""
        return len(self._tasks(job_name))

    def task_indices(self, job_name: Any) -> list:
        """The sorted task indices of `job_name`; ValueError if the cluster has no such job."""
        return sorted(self._tasks(job_name))

    def task_address(self, job_name: Any, task_index: int) -> Any:
        """The address of task `task_index` of `job_name`; ValueError if there is no such job or task."""
        tasks = self._tasks(job_name)
        try:
            return tasks[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name: Any) -> list:
        """The addresses of `job_name` by task index, None where a sparse job has no task (so its length may exceed
        num_tasks); [] for a job with no tasks. ValueError if the cluster has no such job."""
        tasks = self._tasks(job_name)
        result = [None] * (max(tasks) + 1 if tasks else 0)
        for index, address in tasks.items():
            result[index] = address
        return result
