"""tf.train.export_meta_graph and tf.train.import_meta_graph: a graph, its collections and its saver in a `.meta`
file, and back into a fresh graph with a Saver that restores its checkpoints.

    saver.save(sess, "/tmp/run/model")                        # also writes /tmp/run/model.meta
    # in another process:
    saver = tf.train.import_meta_graph("/tmp/run/model.meta")
    saver.restore(sess, "/tmp/run/model")                     # the variables as saved; train on from there
"""
from __future__ import annotations

import logging

from adplace.framework import meta_graph
from adplace.framework.graph import Graph, GraphKeys, get_default_graph

_log = logging.getLogger("adplace")


def export_meta_graph(filename: str | None = None, meta_info_def=None, graph_def=None, saver_def=None,
                      collection_list=None, as_text: bool = False, graph: Graph | None = None,
                      export_scope: str | None = None, clear_devices: bool = False,
                      clear_extraneous_savers: bool = False, strip_default_attrs: bool = False,
                      save_debug_info: bool = False, **kwargs):
    """The MetaGraphDef of `graph` (default: the default graph), written to `filename` when given (TF 1.15's
    arguments; `strip_default_attrs` drops attrs equal to their OpDef default and marks the meta info so;
    `clear_extraneous_savers` leaves out other savers' ops; `save_debug_info` is accepted and unused)."""
    del save_debug_info
    if kwargs:
        raise TypeError(f"export_meta_graph() got unexpected keyword arguments: {sorted(kwargs)}")
    meta_graph_def, _ = meta_graph.export_scoped_meta_graph(
        filename=filename, graph_def=graph_def, graph=graph, export_scope=export_scope, as_text=as_text,
        clear_devices=clear_devices, saver_def=saver_def, collection_list=collection_list,
        meta_info_def=meta_info_def, strip_default_attrs=strip_default_attrs,
        clear_extraneous_savers=clear_extraneous_savers)
    return meta_graph_def


def import_meta_graph(meta_graph_or_file, clear_devices: bool = False, import_scope: str | None = None, **kwargs):
    """Import a MetaGraphDef (or a `.meta` file) into the default graph; returns a Saver for its variables (built on
    the imported save and restore ops when the meta graph has a saver_def), or None when there is nothing to save.
    kwargs as TF's: `input_map`, `return_elements` (then returns (saver, elements)), `restore_collections_predicate`."""
    from adplace.train.saver import Saver

    return_elements = kwargs.pop("return_elements", None)
    meta_graph_def = (meta_graph.read_meta_graph_file(meta_graph_or_file) if isinstance(meta_graph_or_file, str)
                      else meta_graph_or_file)
    var_list = meta_graph.import_scoped_meta_graph(meta_graph_def, clear_devices=clear_devices,
                                                   import_scope=import_scope, return_elements=return_elements,
                                                   **kwargs)
    if return_elements is not None:
        var_list, elements = var_list
    if meta_graph_def.HasField("saver_def"):
        scope = import_scope
        if var_list:
            key, variable = next(iter(var_list.items()))
            scope = variable.name[:-len(key)]
        saver = Saver(saver_def=meta_graph_def.saver_def, name=scope)
    elif get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope=import_scope) or \
            get_default_graph().get_collection("saveable_objects", scope=import_scope):
        saver = Saver()
    else:
        _log.info("Saver not created because there are no variables in the graph to restore")
        saver = None
    return (saver, elements) if return_elements is not None else saver
