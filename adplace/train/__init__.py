"""adplace.train: device setters, optimizers, savers and the multi-GPU tower helpers (parallel.py)."""
from adplace.train.adadelta import AdadeltaOptimizer
from adplace.train.adagrad import AdagradOptimizer
from adplace.train.adam import AdamOptimizer
from adplace.train.ftrl import FtrlOptimizer
from adplace.train.device_setter import PS_OPS, STANDARD_PS_OPS, assign_to_device, replica_device_setter
from adplace.train.gradient_descent import GradientDescentOptimizer
from adplace.train.sync_replicas_optimizer import SyncReplicasOptimizer
from adplace.train.learning_rate_decay import (cosine_decay, cosine_decay_restarts, exponential_decay,
                                               inverse_time_decay, linear_cosine_decay, natural_exp_decay,
                                               noisy_linear_cosine_decay, piecewise_constant, polynomial_decay)
from adplace.train.momentum import MomentumOptimizer
from adplace.train.optimizer import Optimizer
from adplace.train.parallel import average_gradients, make_parallel
from adplace.train.rmsprop import RMSPropOptimizer
from adplace.train import queue_runner
from adplace.train.coordinator import Coordinator, LooperThread
from adplace.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners
from adplace.train.input import (batch, batch_join, input_producer, limit_epochs, match_filenames_once, maybe_batch,
                                 maybe_batch_join, maybe_shuffle_batch, maybe_shuffle_batch_join, range_input_producer, shuffle_batch,
                                 shuffle_batch_join, slice_input_producer, string_input_producer)
from adplace.train.checkpoint_management import (CheckpointState, checkpoint_exists, generate_checkpoint_state_proto,
                                                  get_checkpoint_mtimes, get_checkpoint_state, latest_checkpoint,
                                                  remove_checkpoint, update_checkpoint_state)
from adplace.train.checkpoint_utils import (CheckpointReader, NewCheckpointReader, checkpoints_iterator,
                                            init_from_checkpoint, list_variables, load_checkpoint, load_variable)
from adplace.train.meta_graphs import export_meta_graph, import_meta_graph
from adplace.train.saver import Saver
from adplace.framework.graph_io import write_graph
from adplace.summary.summary_iterator import summary_iterator
from adplace.train.training_util import (create_global_step, get_global_step, get_or_create_global_step,
                                         global_step)
from adplace.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunHook, SessionRunValues
from adplace.train.basic_session_run_hooks import (CheckpointSaverHook, CheckpointSaverListener, FeedFnHook,
                                                   FinalOpsHook, GlobalStepWaiterHook, LoggingTensorHook,
                                                   NanLossDuringTrainingError, NanTensorHook, SecondOrStepTimer,
                                                   StepCounterHook, StopAtStepHook, SummarySaverHook)
from adplace.train.session_manager import SessionManager
from adplace.train.monitored_session import (ChiefSessionCreator, MonitoredSession, MonitoredTrainingSession, Scaffold,
                                             SessionCreator, SingularMonitoredSession, WorkerSessionCreator)
from adplace.train.supervisor import Supervisor
from adplace.distributed.cluster_spec import ClusterSpec
from adplace.distributed.server import Server

__all__ = ["PS_OPS", "STANDARD_PS_OPS", "assign_to_device", "replica_device_setter"]
__all__ += ["CheckpointReader", "CheckpointState", "NewCheckpointReader", "Saver", "checkpoint_exists",
            "get_checkpoint_mtimes", "get_checkpoint_state", "init_from_checkpoint", "latest_checkpoint",
            "list_variables", "load_checkpoint",
            "load_variable", "remove_checkpoint", "update_checkpoint_state"]
__all__ += ["AdadeltaOptimizer"]
__all__ += ["FtrlOptimizer"]
__all__ += ["SyncReplicasOptimizer", "AdagradOptimizer", "AdamOptimizer", "GradientDescentOptimizer", "MomentumOptimizer", "Optimizer",
            "RMSPropOptimizer", "create_global_step", "get_global_step", "get_or_create_global_step", "global_step"]
__all__ += ["average_gradients", "export_meta_graph", "import_meta_graph", "make_parallel", "write_graph"]
__all__ += ["summary_iterator"]
__all__ += ["checkpoints_iterator", "generate_checkpoint_state_proto"]
__all__ += ["cosine_decay", "cosine_decay_restarts", "exponential_decay", "inverse_time_decay", "linear_cosine_decay",
            "natural_exp_decay", "noisy_linear_cosine_decay", "piecewise_constant", "polynomial_decay"]
__all__ += ["Coordinator", "LooperThread", "QueueRunner", "add_queue_runner", "queue_runner", "start_queue_runners"]
__all__ += ["batch", "batch_join", "input_producer", "limit_epochs", "match_filenames_once", "maybe_batch", "maybe_batch_join",
            "maybe_shuffle_batch", "maybe_shuffle_batch_join", "range_input_producer", "shuffle_batch",
            "shuffle_batch_join", "slice_input_producer", "string_input_producer"]
__all__ += ["SessionRunArgs", "SessionRunContext", "SessionRunHook", "SessionRunValues", "CheckpointSaverHook",
            "CheckpointSaverListener", "FeedFnHook", "FinalOpsHook", "GlobalStepWaiterHook", "LoggingTensorHook",
            "NanLossDuringTrainingError", "NanTensorHook", "SecondOrStepTimer", "StepCounterHook", "StopAtStepHook",
            "SummarySaverHook", "SessionManager", "ChiefSessionCreator", "MonitoredSession",
            "MonitoredTrainingSession", "Scaffold", "SessionCreator", "SingularMonitoredSession",
            "WorkerSessionCreator", "Supervisor"]
__all__ += ["ClusterSpec", "ClusterDef", "JobDef", "Server"]

_EXAMPLE_PROTOS = frozenset({"BytesList", "Example", "Feature", "FeatureList", "FeatureLists", "Features", "FloatList",
                             "Int64List", "SequenceExample"})


def __getattr__(name: str):
    """tf.train.Example, Features, Feature, BytesList, ... and ClusterDef, JobDef: TF's protos, loaded on first use."""
    if name in _EXAMPLE_PROTOS:
        from adplace.lib import protos
        return getattr(protos.example_pb2, name)
    if name in ("ClusterDef", "JobDef"):
        from adplace.lib import protos
        return getattr(protos.cluster_pb2, name)
    raise AttributeError(f"module 'adplace.train' has no attribute {name!r}")
