"""TensorShape and Dimension: static shapes with unknown dimensions (tf.TensorShape)."""
from __future__ import annotations

from typing import Iterable


class Dimension:
    """One dimension of a static shape; `value` is an int or None (unknown).

    Arithmetic with an unknown dimension gives an unknown one, and comparisons involving one give None (TF1):

        Dimension(12) + 3 == Dimension(15)      # True
        Dimension(None) < Dimension(3)          # None: undecidable
    """

    __slots__ = ("_value",)

    def __init__(self, value):
        if isinstance(value, Dimension):
            value = value._value
        if value is not None:
            if hasattr(value, "__index__"):
                value = int(value.__index__())
            elif isinstance(value, (str, bytes, int, float)):
                number = int(value)
                if not isinstance(value, (str, bytes)) and number != value:
                    raise ValueError(f"Ambiguous dimension: {value}")
                value = number
            else:
                raise TypeError(f"Cannot convert {value!r} (type {type(value).__name__}) to a Dimension")
            if value < 0:
                raise ValueError(f"Dimension {value} must be >= 0")
        self._value = value

    value = property(lambda self: self._value)

    def __int__(self) -> int:
        if self._value is None:
            raise TypeError("Cannot convert an unknown Dimension to an int")
        return self._value

    __index__ = __int__

    def _compare(self, other, fn):
        """fn(self, other) on known values; None when either is unknown; NotImplemented for a non-dimension."""
        try:
            other = as_dimension(other)._value
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other is None:
            return None
        return fn(self._value, other)

    __eq__ = lambda self, o: self._compare(o, lambda a, b: a == b)  # noqa: E731
    __ne__ = lambda self, o: self._compare(o, lambda a, b: a != b)  # noqa: E731
    __lt__ = lambda self, o: self._compare(o, lambda a, b: a < b)  # noqa: E731
    __le__ = lambda self, o: self._compare(o, lambda a, b: a <= b)  # noqa: E731
    __gt__ = lambda self, o: self._compare(o, lambda a, b: a > b)  # noqa: E731
    __ge__ = lambda self, o: self._compare(o, lambda a, b: a >= b)  # noqa: E731

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"Dimension({self._value})"

    __str__ = lambda self: "?" if self._value is None else str(self._value)  # noqa: E731

    def _arith(self, other, fn, reflected: bool = False):
        try:
            other = as_dimension(other)._value
        except (TypeError, ValueError):
            return NotImplemented  # lets `dim * [4]` repeat the list, as with an int
        if self._value is None or other is None:
            return Dimension(None)
        return Dimension(fn(other, self._value) if reflected else fn(self._value, other))

    __add__ = __radd__ = lambda self, o: self._arith(o, lambda a, b: a + b)  # noqa: E731
    __mul__ = __rmul__ = lambda self, o: self._arith(o, lambda a, b: a * b)  # noqa: E731
    __sub__ = lambda self, o: self._arith(o, lambda a, b: a - b)  # noqa: E731
    __rsub__ = lambda self, o: self._arith(o, lambda a, b: a - b, reflected=True)  # noqa: E731
    __floordiv__ = lambda self, o: self._arith(o, lambda a, b: a // b)  # noqa: E731
    __rfloordiv__ = lambda self, o: self._arith(o, lambda a, b: a // b, reflected=True)  # noqa: E731
    __mod__ = lambda self, o: self._arith(o, lambda a, b: a % b)  # noqa: E731
    __rmod__ = lambda self, o: self._arith(o, lambda a, b: a % b, reflected=True)  # noqa: E731

    def __truediv__(self, other):
        raise TypeError("unsupported operand type(s) for /: 'Dimension' and "
                        f"'{type(other).__name__}', please use // instead")

    def __rtruediv__(self, other):
        raise TypeError(f"unsupported operand type(s) for /: '{type(other).__name__}' and "
                        "'Dimension', please use // instead")

    def is_compatible_with(self, other) -> bool:
        other = Dimension(other)._value
        return self._value is None or other is None or self._value == other

    def assert_is_compatible_with(self, other) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {as_dimension(other)} are not compatible")

    def merge_with(self, other) -> "Dimension":
        other = Dimension(other)._value
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {other} are not compatible")
        return Dimension(self._value if self._value is not None else other)


def as_dimension(value) -> Dimension:
    """`value` as a Dimension (a Dimension is returned as is)."""
    return value if isinstance(value, Dimension) else Dimension(value)


def dimension_value(dimension):
    """The int (or None) in a Dimension or a plain value (tf.compat.dimension_value)."""
    return dimension.value if isinstance(dimension, Dimension) else dimension


class TensorShape:
    """A static shape: unknown rank (`dims is None`) or a tuple of dims, each an int or None."""

    __slots__ = ("_dims",)

    def __init__(self, dims=None):
        if isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif dims is None:
            self._dims = None
        elif isinstance(dims, (str, bytes)):
            raise TypeError(f"A string has ambiguous TensorShape, please wrap in a list or convert to an int: {dims}")
        elif isinstance(dims, (int, Dimension)) or (hasattr(dims, "__index__") and getattr(dims, "ndim", 0) == 0):
            self._dims = (Dimension(dims)._value,)  # a NumPy integer scalar too; an int array is a list of dims
        else:
            self._dims = tuple(Dimension(d)._value for d in dims)

    @property
    def dims(self):
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    rank = ndims

    def as_list(self) -> list:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def as_tuple(self):
        """The dims as a tuple of int/None, or None for unknown rank (cheap internal form)."""
        return self._dims

    def is_fully_defined(self) -> bool:
        return self._dims is not None and None not in self._dims

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other) -> bool:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        return len(self._dims) == len(other._dims) and all(
            a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other) -> "TensorShape":
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def assert_is_compatible_with(self, other) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def assert_is_fully_defined(self) -> None:
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def assert_has_rank(self, rank: int) -> None:
        if self._dims is not None and len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")

    def assert_same_rank(self, other) -> None:
        other = as_shape(other)
        if self._dims is not None and other._dims is not None and len(self._dims) != len(other._dims):
            raise ValueError(f"Shapes {self} and {other} must have the same rank")

    def most_specific_compatible_shape(self, other) -> "TensorShape":
        """The most specific shape compatible with both: equal dims kept, others unknown; unknown rank if the
        ranks differ or either is unknown. TensorShape([1, 2]) and [3, 2] give (?, 2)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None or len(self._dims) != len(other._dims):
            return unknown_shape()
        return TensorShape([a if a == b else None for a, b in zip(self._dims, other._dims)])

    def with_rank(self, rank: int) -> "TensorShape":
        if self._dims is None:
            return TensorShape([None] * rank)
        if len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def with_rank_at_least(self, rank: int) -> "TensorShape":
        if self._dims is not None and len(self._dims) < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank: int) -> "TensorShape":
        if self._dims is not None and len(self._dims) > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    def concatenate(self, other) -> "TensorShape":
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return (Dimension(d) for d in self._dims)

    def __getitem__(self, key):
        """A Dimension (TF1: `shape[0].value`), or a TensorShape for a slice."""
        if self._dims is None:
            return TensorShape(None) if isinstance(key, slice) else Dimension(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other):
        """TF1: inequality with an unknown-rank shape is undefined (ValueError), though `==` answers."""
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._dims is None or other._dims is None:
            raise ValueError("The inequality of unknown TensorShapes is undefined.")
        return self._dims != other._dims

    def __add__(self, other) -> "TensorShape":
        return self.concatenate(other)

    def __radd__(self, other) -> "TensorShape":
        return as_shape(other).concatenate(self)

    def __hash__(self) -> int:
        return hash(self._dims)

    def __bool__(self) -> bool:
        return self._dims is not None

    def __repr__(self) -> str:
        return f"TensorShape({self.as_list() if self._dims is not None else None})"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join("?" if d is None else str(d) for d in self._dims)
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"


def as_shape(shape) -> TensorShape:
    """Convert a list/tuple/TensorShape/None to a TensorShape."""
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape(rank: int | None = None, ndims: int | None = None) -> TensorShape:
    """A shape of unknown dims: unknown rank, or `rank` unknown dims (`ndims` is TF1's older name)."""
    rank = ndims if rank is None else rank
    return TensorShape(None if rank is None else [None] * rank)


def scalar() -> TensorShape:
    """The shape of a scalar, ()."""
    return TensorShape([])


def vector(length) -> TensorShape:
    """The shape of a vector of `length` elements (None: unknown)."""
    return TensorShape([length])


def matrix(rows, cols) -> TensorShape:
    """The shape of a rows x cols matrix (either may be None)."""
    return TensorShape([rows, cols])


def dims_text(dims: Iterable | None) -> str:
    """TF's bracket form for error messages: [2,?,3]."""
    return "?" if dims is None else "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def broadcast_reduction_axes(s0: tuple, s1: tuple) -> tuple[list, list]:
    """The axes of broadcast(s0, s1) that each operand's gradient is summed over (TF's BroadcastGradientArgs):
    axes an operand lacks or has as 1 (listed for both when both are 1). ValueError if the shapes do not broadcast."""
    n = max(len(s0), len(s1))
    a, b = (1,) * (n - len(s0)) + tuple(s0), (1,) * (n - len(s1)) + tuple(s1)
    r0, r1 = [], []
    for i, (x, y) in enumerate(zip(a, b)):
        if x == 1:
            r0.append(i)
        if y == 1:
            r1.append(i)
        if x != y and x != 1 and y != 1:
            raise ValueError(f"Incompatible shapes: {dims_text(s0)} vs. {dims_text(s1)}")
    return r0, r1
