"""adplace.train: device setters, optimizers, savers and the multi-GPU tower helpers (parallel.py)."""
from adplace.train.adadelta import AdadeltaOptimizer
from adplace.train.adagrad import AdagradOptimizer
from adplace.train.adam import AdamOptimizer
from adplace.train.device_setter import PS_OPS, STANDARD_PS_OPS, assign_to_device, replica_device_setter
from adplace.train.gradient_descent import GradientDescentOptimizer
from adplace.train.learning_rate_decay import (cosine_decay, cosine_decay_restarts, exponential_decay,
                                               inverse_time_decay, linear_cosine_decay, natural_exp_decay,
                                               noisy_linear_cosine_decay, piecewise_constant, polynomial_decay)
from adplace.train.momentum import MomentumOptimizer
from adplace.train.optimizer import Optimizer
from adplace.train.parallel import average_gradients, make_parallel
from adplace.train.rmsprop import RMSPropOptimizer
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

__all__ = ["PS_OPS", "STANDARD_PS_OPS", "assign_to_device", "replica_device_setter"]
__all__ += ["CheckpointReader", "CheckpointState", "NewCheckpointReader", "Saver", "checkpoint_exists",
            "get_checkpoint_mtimes", "get_checkpoint_state", "init_from_checkpoint", "latest_checkpoint",
            "list_variables", "load_checkpoint",
            "load_variable", "remove_checkpoint", "update_checkpoint_state"]
__all__ += ["AdadeltaOptimizer"]
__all__ += ["AdagradOptimizer", "AdamOptimizer", "GradientDescentOptimizer", "MomentumOptimizer", "Optimizer",
            "RMSPropOptimizer", "create_global_step", "get_global_step", "get_or_create_global_step", "global_step"]
__all__ += ["average_gradients", "export_meta_graph", "import_meta_graph", "make_parallel", "write_graph"]
__all__ += ["summary_iterator"]
__all__ += ["checkpoints_iterator", "generate_checkpoint_state_proto"]
__all__ += ["cosine_decay", "cosine_decay_restarts", "exponential_decay", "inverse_time_decay", "linear_cosine_decay",
            "natural_exp_decay", "noisy_linear_cosine_decay", "piecewise_constant", "polynomial_decay"]
