"""What a run reports in its RunMetadata proto: step stats when traced, partition graphs when asked.

    run_metadata = tf.RunMetadata()
    sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, output_partition_graphs=True),
             run_metadata=run_metadata)
    run_metadata.step_stats.dev_stats        # per device, the nodes that ran (runtime/step_stats.py)
    run_metadata.partition_graphs            # one GraphDef per device that ran part of the step

A partition graph is what TF 1.x's DirectSession hands each device: the NodeDefs of the ops placed there (`device`
the full device name), each data edge from another device cut into a `_Send` on the producer's device and a `_Recv`
on the consumer's (`<op>/_<k>`, attrs tensor_name `edge_<k>_<op>`, send_device, recv_device...), and each fed tensor
read through a client-terminated `_Recv` (`_recv_<tensor>_0`). Control edges from other devices are left out.
"""
from __future__ import annotations

from adplace.lib import protos
from adplace.runtime.step_stats import fill_step_stats


def _graph_io():
    from adplace.framework import graph_io  # GraphDef conversion: loaded for the first partition graph only

    return graph_io


def fill_run_metadata(run_metadata, options, plan, records: list | None, devices: list, clock: tuple) -> None:
    """Replace `run_metadata`'s contents with this run's report, as TF parses the C++ session's answer into it:
    step stats when `records` (a traced run's), partition graphs when `options.output_partition_graphs`."""
    run_metadata.Clear()
    if records is not None:
        run_metadata.step_stats.SetInParent()  # present even when no step ran (everything fed)
        fill_step_stats(run_metadata.step_stats, plan, records, devices, *clock)
    if options is not None and options.output_partition_graphs:
        run_metadata.partition_graphs.extend(partition_graphs(plan, devices[0].name))


def _placed_ops(plan) -> dict:
    """Op -> the name of the device it ran on, in step order; a fused kernel's member ops on the kernel's device."""
    placed = {}
    for index, op in enumerate(plan.ops):
        if index in plan.transfer_steps:
            continue
        device = plan.devices[index].name
        for name in plan.fused.get(index, ()):
            placed.setdefault(op.graph.get_operation_by_name(name), device)
        placed.setdefault(op, device)
    for op, device, _ in plan.folded_nodes:  # computed when the plan was built: still ops of the step, as unfolded
        placed.setdefault(op, device.name)
    return placed


class _Partitioner:
    """Builds the GraphDef of each device, cutting cross-device data edges into _Send/_Recv pairs."""

    def __init__(self, placed: dict, fed: set, client_device: str):
        self.placed, self.fed, self.client_device = placed, fed, client_device
        self.graphs: dict[str, object] = {}
        self.recvs: dict[tuple, str] = {}  # (tensor, consumer device) -> the _Recv node's name there
        self.edges = 0

    def graph(self, device: str):
        graph_def = self.graphs.get(device)
        if graph_def is None:
            graph_def = self.graphs[device] = protos.graph_pb2.GraphDef()
            graph_def.versions.CopyFrom(_graph_io().versions())
        return graph_def

    def _transfer_node(self, graph_def, name: str, op: str, tensor, tensor_name: str, send: str, recv: str,
                       client: bool):
        node = graph_def.node.add(name=name, op=op, device=recv if op == "_Recv" else send)
        node.attr["tensor_type" if op == "_Recv" else "T"].type = tensor.dtype.base_dtype.as_datatype_enum
        node.attr["tensor_name"].s = tensor_name.encode()
        node.attr["send_device"].s = send.encode()
        node.attr["send_device_incarnation"].i = 1
        node.attr["recv_device"].s = recv.encode()
        node.attr["client_terminated"].b = client
        return node

    def input_for(self, tensor, device: str) -> str:
        """The input naming `tensor` for a consumer on `device`: the tensor itself, or the _Recv bringing it."""
        source = self.placed.get(tensor.op)
        fed = tensor in self.fed
        if not fed and (source is None or source == device):
            return tensor._as_node_def_input()
        key = (tensor, device)
        if key not in self.recvs:
            if fed:
                name = f"_recv_{tensor.op.name.replace('/', '_')}_{tensor.value_index}"
                self._transfer_node(self.graph(device), name, "_Recv", tensor, tensor.name, self.client_device,
                                    device, True)
            else:
                k, self.edges = self.edges, self.edges + 2
                edge = f"edge_{k}_{tensor.op.name}"
                send = self._transfer_node(self.graph(source), f"{tensor.op.name}/_{k}", "_Send", tensor, edge,
                                           source, device, False)
                send.input.append(tensor._as_node_def_input())
                name = f"{tensor.op.name}/_{k + 1}"
                self._transfer_node(self.graph(device), name, "_Recv", tensor, edge, source, device, False)
            self.recvs[key] = name
        return self.recvs[key]

    def add(self, op, device: str) -> None:
        graph_io, names = _graph_io(), None
        if op.type in graph_io.SLICE_OPS and "slice_spec" in op._attrs:
            names = graph_io.slice_const_names(op)
            for const in graph_io._slice_consts(op, names):
                const.device = device
                self.graph(device).node.append(const)
        node = graph_io.node_def(op, slice_names=names)
        node.device = device
        data = [self.input_for(t, device) for t in op.inputs]
        n_data = len(node.input) - len(op.control_inputs)
        controls = [f"^{c.name}" for c in op.control_inputs if self.placed.get(c) == device]
        if names:  # the slice consts sit between the first data input and the rest
            data[1:1] = list(node.input[1:4])
        del node.input[:]
        node.input.extend(data[:n_data] + controls)
        self.graph(device).node.append(node)


def partition_graphs(plan, client_device: str) -> list:
    """One GraphDef per device that ran part of `plan`, in the order devices first ran a step."""
    placed = _placed_ops(plan)
    partitioner = _Partitioner(placed, set(plan.feed_tensors), client_device)
    for device in placed.values():
        partitioner.graph(device)
    for op, device in placed.items():
        partitioner.add(op, device)
    return list(partitioner.graphs.values())
