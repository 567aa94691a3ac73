"""The one test of 'is this a tensor' the ADCME functions share."""
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.operation import Tensor


def is_tensor_like(x) -> bool:
    """Tensors and variables (anything with a graph, a static shape and a dtype)."""
    return isinstance(x, Tensor) or all(hasattr(x, a) for a in ("graph", "shape", "dtype"))


def as_tensor(x, where: str) -> Tensor:
    """`x` as a Tensor (variables read, Julia numbers and arrays become constants); `where` names the caller."""
    if isinstance(x, Tensor):
        return x
    try:
        return convert_to_tensor(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{where}: expected a tensor, got {type(x).__name__} ({e})") from None


def describe(x) -> str:
    """A short name for error messages: the tensor's name, or its type."""
    return getattr(x, "name", None) or type(x).__name__
