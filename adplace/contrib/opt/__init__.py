"""tf.contrib.opt: external optimizers (scipy.optimize.minimize) driving a Session; SciPy is needed only to build
or run a ScipyOptimizerInterface (pip install "adplace[scipy]")."""
from adplace.contrib.opt.external_optimizer import ExternalOptimizerInterface, ScipyOptimizerInterface

__all__ = ["ExternalOptimizerInterface", "ScipyOptimizerInterface"]
