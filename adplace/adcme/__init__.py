"""ADCME.jl's conventions as Python functions: what ADPlace.jl (julia/src) calls for its ADCME API.

ADCME maps a Julia array onto a tensor with the same indices (`A[i, j]` is the tensor's `[i-1, j-1]`), counts from
1, reshapes and flattens in Julia's column-major order, and takes Jacobians where TF sums. The Julia package converts
its arguments (ranges to 1-based index vectors, `:` to `slice(None)`) and calls these; everything with a rule worth
testing lives here, where Python tests check it against NumPy (Julia's `reshape` is NumPy's `order="F"`).
"""
from adplace.adcme.errors import error_parts
from adplace.adcme.gradients import gradients, hessian, hessian_vector, jacobian
from adplace.adcme.indexing import getindex, length, ndims, scatter_add, scatter_sub, scatter_update, size
from adplace.adcme.layout import adjoint, cvec, reshape, rvec, transpose, vec
from adplace.adcme.optim import bfgs

__all__ = ["adjoint", "bfgs", "cvec", "error_parts", "getindex", "gradients", "hessian", "hessian_vector",
           "jacobian", "length", "ndims", "reshape", "rvec", "scatter_add", "scatter_sub", "scatter_update", "size",
           "transpose", "vec"]
