"""A Python stand-in for how julia/src/ADPlace.jl hands values across the Julia/Python boundary.

No Julia runs here: these classes mirror ADPlace.jl's conversion rules so that Python tests can drive adplace exactly
as the Julia package will.

- `to_julia` is ADPlace's `tojulia`: str -> `JuliaString`, bool/int/float/complex/None stay, list -> list (a Julia
  Vector), tuple -> tuple, dict -> dict, NumPy arrays/scalars -> copies/Python numbers, anything else -> `JuliaPyObject`.
- `to_python` is ADPlace's `topy`: the inverse; a Python function stands for a Julia `Function` and becomes
  `julia_function(f)`; a `JuliaType` (a Julia type such as `Float64`) becomes its adplace dtype; NumPy arrays stand
  for Julia numeric arrays and lists for `Vector{Any}`; raw Python objects (PythonCall's `Py`) pass unchanged.
- `julia_function(f)` is `pyfunc(julia_callback(f))`: arguments through `to_julia`, the result through `to_python`.
- `raw_julia_function(f)` is PythonCall's plain `pyfunc(f)`: arguments arrive as raw Python objects (a Python `str`
  stays a `str`, which never equals a `JuliaString`); only the result is converted, as `Py(result)` does.
- `python_index(i)` is ADPlace's `python_index` (julia/src/arrays.jl): how a Julia index reaches `tf.adcme`.

The tables of types (`dtype(::Type{T}) = tf.x` methods, `const JULIA_ELTYPES`) are read from the Julia source, so
the stand-in cannot drift from it; the rules above are checked against the source by tests/julia.
"""
import builtins
import re
import types

import numpy as np

import adplace
from julia_sources import package_source

SOURCE = package_source()


def _dtype_methods(source: str) -> dict:
    """Julia type name -> adplace dtype name, from ADPlace's `dtype(::Type{T}) = tf.x` methods (a Union names several)."""
    table = {}
    for names, dtype in re.findall(r"^dtype\(::Type\{(?:<:Union\{)?([\w, ]+)\}?\}\) = tf\.(\w+)$", source, re.M):
        table.update({name.strip(): dtype for name in names.split(",")})
    return table


def _eltypes(source: str) -> dict:
    """NumPy dtype name -> Julia type name, from ADPlace's `const JULIA_ELTYPES = Dict(...)`."""
    body = re.search(r"^const JULIA_ELTYPES = Dict\((.*?)\n\)", source, re.S | re.M).group(1)
    return dict(re.findall(r'"(\w+)" => (\w+)', body))


JULIA_DTYPES = _dtype_methods(SOURCE)
NUMPY_TO_JULIA = _eltypes(SOURCE)


class JuliaString:
    """A Julia `String`: equal to a JuliaString with the same text and never to a Python `str` (Julia's `==` between
    a `String` and PythonCall's `Py` falls back to `===`, which is false)."""

    __slots__ = ("text",)

    def __init__(self, text):
        if not isinstance(text, str):
            raise TypeError(f"JuliaString takes a str, got {type(text).__name__}")
        self.text = text

    def __eq__(self, other):
        return isinstance(other, JuliaString) and other.text == self.text

    def __hash__(self):
        return hash((JuliaString, self.text))

    def __repr__(self):
        return f"JuliaString({self.text!r})"


class JuliaPyObject:
    """ADPlace's `PyObject`: a Python object whose attributes and call results come back through `to_julia`."""

    __slots__ = ("_py",)

    def __init__(self, py):
        object.__setattr__(self, "_py", py)

    def __getattr__(self, name):
        return to_julia(getattr(self._py, name))

    def __call__(self, *args, **kwargs):
        result = self._py(*map(to_python, args), **{k: to_python(v) for k, v in kwargs.items()})
        return to_julia(result)

    def __eq__(self, other):  # Base.:(==)(::PyObject, ::PyObject) = pyeq(Bool, ...)
        return isinstance(other, JuliaPyObject) and bool(self._py == other._py)

    def __hash__(self):
        return hash(self._py)

    def __repr__(self):
        return f"PyObject {self._py!r}"


class JuliaType:
    """A Julia type of ADPlace's dtype table (`Float64`, `Int32`, ...): what `get_dtype` returns, and what
    `topy(T::Type) = topy(dtype(T))` turns into an adplace dtype."""

    __slots__ = ("name",)
    DTYPES = JULIA_DTYPES

    def __init__(self, name):
        if name not in self.DTYPES:
            raise ValueError(f"no adplace dtype for the Julia type {name}")
        self.name = name

    @property
    def dtype(self):
        return getattr(adplace, self.DTYPES[self.name])

    def __eq__(self, other):
        return isinstance(other, JuliaType) and other.name == self.name

    def __hash__(self):
        return hash((JuliaType, self.name))

    def __repr__(self):
        return self.name


class _PyFunc:
    """What `pyfunc` gives Python: a plain Python callable wrapping a Julia function."""

    def __init__(self, f, convert_args):
        self.f, self.convert_args = f, convert_args

    def __call__(self, *args, **kwargs):
        if self.convert_args:
            args = [to_julia(a) for a in args]
            kwargs = {k: to_julia(v) for k, v in kwargs.items()}
        return to_python(self.f(*args, **kwargs))

    def __repr__(self):
        return f"<pyfunc {getattr(self.f, '__name__', self.f)!r}>"


def to_julia(x):
    """ADPlace.jl's `tojulia` (same order of checks: None, bool, str, int, float, complex, list, tuple, dict, NumPy)."""
    if x is None or isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return x
    if isinstance(x, str):
        return JuliaString(str(x))
    if isinstance(x, list):
        return [to_julia(v) for v in x]
    if isinstance(x, tuple):
        return tuple(to_julia(v) for v in x)
    if isinstance(x, dict):
        return {to_julia(k): to_julia(v) for k, v in x.items()}
    if isinstance(x, (np.ndarray, np.generic)):
        a = np.asarray(x)
        if a.dtype.kind not in "biufc":
            return to_julia(a.tolist())
        return a.item() if a.ndim == 0 else a.copy()
    return JuliaPyObject(x)


def to_python(x):
    """ADPlace.jl's `topy`: Julia values back to Python; a raw Python object (a `Py`) passes unchanged."""
    if isinstance(x, JuliaPyObject):
        return x._py
    if isinstance(x, JuliaString):
        return x.text
    if isinstance(x, JuliaType):
        return x.dtype
    if isinstance(x, (list, tuple)):
        values = [to_python(v) for v in x]
        return tuple(values) if isinstance(x, tuple) else values
    if isinstance(x, dict):
        return {to_python(k): to_python(v) for k, v in x.items()}
    if isinstance(x, types.FunctionType):  # a Julia Function: topy(f::Function) = pyfunc(julia_callback(f))
        return julia_function(x)
    return x


def julia_function(f):
    """`topy(f)` of ADPlace.jl: `pyfunc(julia_callback(f))`, whose arguments go through `to_julia`."""
    return _PyFunc(f, convert_args=True)


def raw_julia_function(f):
    """PythonCall's own `pyfunc(f)`: arguments arrive as raw Python objects, unconverted."""
    return _PyFunc(f, convert_args=False)


def pybuiltin(name):
    """ADPlace's `pybuiltin(name)`: the Python builtin as a `JuliaPyObject`."""
    return JuliaPyObject(getattr(builtins, name))


def python_index(i):
    """ADPlace's `python_index`: Julia's Int as an int, `:` (a `slice(None)` here) as it is, ranges (Python `range`s
    here, already 1-based) and integer vectors as int64 arrays, Bool vectors as bool arrays, tensors as they are."""
    if isinstance(i, JuliaPyObject):
        return i
    if isinstance(i, slice):
        if i != slice(None):
            raise ValueError("the stand-in's Colon is slice(None)")
        return i
    if isinstance(i, (bool, np.bool_)):
        raise TypeError("a Bool is not a Julia index here")
    if isinstance(i, (int, np.integer)):
        return int(i)
    if isinstance(i, range):
        return np.array(i, dtype=np.int64)
    array = np.asarray(i)
    if array.dtype == np.bool_:
        return array.copy()
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    raise TypeError(f"a tensor index must be an integer, a range, a vector of integers or Bools, `:` or an integer "
                    f"tensor; got {type(i).__name__}")


# --- twins of ADPlace.jl methods that the Python tests share (each checked against the source where it is used) ----
jl_adplace = JuliaPyObject(adplace)


def getindex(x, *indices):
    """`x[indices...]`: tf.adcme.getindex with each index through python_index (julia/src/arrays.jl)."""
    return jl_adplace.adcme.getindex(x, *map(python_index, indices))


def scatter(kind: str, x, *args):
    """`scatter_update/add/sub(x, indices..., value)` (`kind` names which): the indices through python_index."""
    return getattr(jl_adplace.adcme, kind)(x, *map(python_index, args[:-1]), args[-1])


def times(x, y):
    """ADPlace's `*` (julia/src/math.jl's `times`): between Julia values, Julia's; otherwise a Julia value becomes a
    constant of the tensor's dtype, a scalar (or two vectors) multiply elementwise, matrix × matrix and matrix ×
    vector are products."""
    if not isinstance(x, JuliaPyObject) and not isinstance(y, JuliaPyObject):
        return x * y
    if not isinstance(x, JuliaPyObject):
        x = jl_adplace.constant(x, dtype=y.dtype.base_dtype)
    if not isinstance(y, JuliaPyObject):
        y = jl_adplace.constant(y, dtype=x.dtype.base_dtype)
    rx, ry = x.shape.ndims, y.shape.ndims
    if rx == 0 or ry == 0:
        return jl_adplace.multiply(x, y)
    if rx == 2 and ry == 2:
        return jl_adplace.matmul(x, y)
    if rx == 2 and ry == 1:
        return jl_adplace.squeeze(jl_adplace.matmul(x, jl_adplace.expand_dims(y, 1)), axis=1)
    assert max(rx, ry) <= 2 and not (rx == 1 and ry == 2)
    return jl_adplace.multiply(x, y)


def julia_reshape(a, *dims):
    """Julia's own `reshape(A, dims...)` of an array (NumPy standing for it: same indices), column-major."""
    return np.reshape(a, dims, order="F")
