"""Tests for adplace.framework.dtypes (tf.DType, tf.as_dtype, *_ref types) and adplace.framework.tensor_shape
(tf.TensorShape, tf.Dimension)."""

import pickle

import numpy as np
import pytest

import adplace as tf
from adplace.framework import dtypes


# --- as_dtype ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("float32", tf.float32), ("float64", tf.float64), ("float16", tf.float16), ("int32", tf.int32),
    ("int64", tf.int64), ("uint8", tf.uint8), ("bool", tf.bool), ("string", tf.string),
    ("complex64", tf.complex64), ("float32_ref", tf.float32_ref),
])
def test_as_dtype_from_names(name, expected):
    assert tf.as_dtype(name) is expected
    assert expected.name == name


@pytest.mark.parametrize("np_type, expected", [
    (np.float32, tf.float32), (np.float64, tf.float64), (np.int32, tf.int32), (np.int64, tf.int64),
    (np.uint8, tf.uint8), (np.int16, tf.int16), (np.bool_, tf.bool), (np.complex128, tf.complex128),
    (np.dtype("float32"), tf.float32), (np.dtype("int64"), tf.int64), (np.float16, tf.float16),
])
def test_as_dtype_from_numpy_types(np_type, expected):
    assert tf.as_dtype(np_type) is expected


def test_as_dtype_from_python_types():
    assert tf.as_dtype(float) is tf.float32
    assert tf.as_dtype(bool) is tf.bool
    assert tf.as_dtype(object) is tf.string


def test_as_dtype_passes_dtypes_through():
    assert tf.as_dtype(tf.float64) is tf.float64


@pytest.mark.parametrize("bad", ["nope", 3.5, "float33"])
def test_as_dtype_rejects_unknown_values(bad):
    with pytest.raises(TypeError, match="Cannot convert value"):
        tf.as_dtype(bad)


def test_dtype_aliases():
    assert tf.double is tf.float64
    assert tf.half is tf.float16


def test_dtype_numpy_equivalents_and_properties():
    assert tf.float32.as_numpy_dtype is np.float32
    assert tf.int64.as_numpy_dtype is np.int64
    assert tf.float32.is_floating and not tf.float32.is_integer
    assert tf.int32.is_integer and not tf.int32.is_floating
    assert tf.uint8.is_unsigned and not tf.int8.is_unsigned
    assert tf.complex64.is_complex
    assert tf.bool.is_bool
    assert tf.float32.size == 4 and tf.float64.size == 8
    assert tf.int32.max == 2**31 - 1 and tf.int32.min == -2**31
    assert tf.uint8.max == 255
    assert tf.float32.max == np.finfo(np.float32).max


def test_datatype_enums_match_tf():
    assert tf.float32.as_datatype_enum == 1
    assert tf.int32.as_datatype_enum == 3
    assert tf.float32_ref.as_datatype_enum == 101


def test_ref_dtypes():
    assert tf.float32_ref.base_dtype is tf.float32
    assert tf.float32_ref.is_ref_dtype
    assert not tf.float32.is_ref_dtype
    assert tf.float32.base_dtype is tf.float32
    assert tf.float32._as_ref is tf.float32_ref
    assert tf.int64_ref.base_dtype is tf.int64
    assert tf.float32_ref.as_numpy_dtype is np.float32
    assert tf.float32_ref.name == "float32_ref"


def test_dtype_compatibility_ignores_ref():
    assert tf.float32.is_compatible_with(tf.float32_ref)
    assert tf.float32_ref.is_compatible_with("float32")
    assert not tf.float32.is_compatible_with(tf.float64)


def test_dtype_pickles_to_same_object():
    assert pickle.loads(pickle.dumps(tf.float32_ref)) is tf.float32_ref
    assert pickle.loads(pickle.dumps(tf.int32)) is tf.int32


def test_dtype_groups():
    assert dtypes.FLOATING == {tf.float16, tf.bfloat16, tf.float32, tf.float64}
    assert tf.int32 in dtypes.INTEGER and tf.float32 not in dtypes.INTEGER
    assert tf.string in dtypes.ALL and tf.string not in dtypes.NUMERIC


def test_variable_dtype_is_ref_and_read_is_base():
    v = tf.Variable(1.0)
    assert v.dtype is tf.float32_ref
    assert v.dtype.base_dtype is tf.float32
    assert v.value().dtype is tf.float32
    assert (v + 1.0).dtype is tf.float32
    w = tf.Variable(np.zeros(2, np.int64))
    assert w.dtype is tf.int64_ref


# --- Dimension --------------------------------------------------------------------------------------------------

def test_dimension_value_and_equality():
    assert tf.Dimension(3).value == 3
    assert tf.Dimension(None).value is None
    assert tf.Dimension(3) == 3
    assert tf.Dimension(3) != 4
    # comparisons involving an unknown dimension are unknown (None)
    assert (tf.Dimension(None) == 3) is None
    assert int(tf.Dimension(5)) == 5
    assert str(tf.Dimension(None)) == "?"


def test_dimension_arithmetic_propagates_unknown():
    assert (tf.Dimension(2) * 3).value == 6
    assert (tf.Dimension(2) + tf.Dimension(5)).value == 7
    assert (tf.Dimension(None) + 1).value is None


def test_dimension_merge_and_compatibility():
    assert tf.Dimension(None).merge_with(4).value == 4
    assert tf.Dimension(4).merge_with(None).value == 4
    assert tf.Dimension(4).is_compatible_with(None)
    assert not tf.Dimension(4).is_compatible_with(5)
    with pytest.raises(ValueError, match="not compatible"):
        tf.Dimension(4).merge_with(5)


def test_dimension_rejects_negative_and_unknown_int():
    with pytest.raises(ValueError, match="must be >= 0"):
        tf.Dimension(-1)
    with pytest.raises(TypeError, match="unknown Dimension"):
        int(tf.Dimension(None))


# --- TensorShape ------------------------------------------------------------------------------------------------

def test_tensor_shape_as_list_and_ndims():
    s = tf.TensorShape([2, None, 3])
    assert s.as_list() == [2, None, 3]
    assert s.ndims == 3
    assert s.rank == 3
    assert len(s) == 3
    assert [d.value for d in s] == [2, None, 3]
    assert s[1].value is None
    assert s[0].value == 2
    assert s[1:].as_list() == [None, 3]
    assert str(s) == "(2, ?, 3)"


def test_tensor_shape_unknown_rank():
    s = tf.TensorShape(None)
    assert s.ndims is None
    assert s.dims is None
    assert not s.is_fully_defined()
    assert s.num_elements() is None
    assert s[0].value is None
    assert str(s) == "<unknown>"
    with pytest.raises(ValueError, match="unknown TensorShape"):
        s.as_list()
    with pytest.raises(ValueError, match="unknown rank"):
        len(s)


def test_tensor_shape_scalar():
    s = tf.TensorShape([])
    assert s.ndims == 0
    assert s.is_fully_defined()
    assert s.num_elements() == 1


def test_tensor_shape_num_elements():
    assert tf.TensorShape([2, 3, 4]).num_elements() == 24
    assert tf.TensorShape([2, None]).num_elements() is None
    assert tf.TensorShape([0, 5]).num_elements() == 0


def test_tensor_shape_is_fully_defined():
    assert tf.TensorShape([1, 2]).is_fully_defined()
    assert not tf.TensorShape([1, None]).is_fully_defined()


def test_tensor_shape_compatibility():
    assert tf.TensorShape([2, None]).is_compatible_with([2, 3])
    assert tf.TensorShape([2, None]).is_compatible_with(tf.TensorShape(None))
    assert tf.TensorShape(None).is_compatible_with([1, 2, 3])
    assert not tf.TensorShape([2, 3]).is_compatible_with([2, 4])
    assert not tf.TensorShape([2, 3]).is_compatible_with([2, 3, 1])
    tf.TensorShape([2, None]).assert_is_compatible_with([2, 7])
    with pytest.raises(ValueError, match="incompatible"):
        tf.TensorShape([2, 3]).assert_is_compatible_with([3, 3])


def test_tensor_shape_merge_with():
    assert tf.TensorShape([2, None]).merge_with([None, 3]).as_list() == [2, 3]
    assert tf.TensorShape(None).merge_with([1, 2]).as_list() == [1, 2]
    assert tf.TensorShape([1, 2]).merge_with(tf.TensorShape(None)).as_list() == [1, 2]
    with pytest.raises(ValueError, match="not compatible"):
        tf.TensorShape([2, 3]).merge_with([2, 4])
    with pytest.raises(ValueError, match="not compatible"):
        tf.TensorShape([2]).merge_with([2, 1])


def test_tensor_shape_equality_and_hash():
    assert tf.TensorShape([1, 2]) == [1, 2]
    assert tf.TensorShape([1, 2]) == tf.TensorShape((1, 2))
    assert tf.TensorShape([1, 2]) != tf.TensorShape([2, 1])
    assert hash(tf.TensorShape([1, None])) == hash(tf.TensorShape([1, None]))


def test_tensor_shape_with_rank_and_concatenate():
    assert tf.TensorShape(None).with_rank(2).as_list() == [None, None]
    assert tf.TensorShape([1, 2]).with_rank(2).as_list() == [1, 2]
    with pytest.raises(ValueError, match="must have rank 3"):
        tf.TensorShape([1, 2]).with_rank(3)
    assert tf.TensorShape([1]).concatenate([2, None]).as_list() == [1, 2, None]
    assert tf.TensorShape([1]).concatenate(tf.TensorShape(None)).ndims is None


def test_tensor_shape_from_dimension_objects_and_int():
    assert tf.TensorShape([tf.Dimension(3), tf.Dimension(None)]).as_list() == [3, None]
    assert tf.TensorShape(5).as_list() == [5]
    assert tf.TensorShape(tf.TensorShape([1, 2])).as_list() == [1, 2]


def test_tf1_dtype_aliases_and_equality():
    assert tf.placeholder("float", [None, 3]).dtype is tf.float32
    assert tf.as_dtype("double") is tf.float64 and tf.as_dtype("half") is tf.float16
    assert tf.float32 == "float32" and tf.float32 == np.float32 and tf.float32 != tf.float64
    assert not (tf.float32 == object()) and tf.float32 != "no such type"
    assert len({tf.float32, tf.float32}) == 1


# --- Dimension arithmetic and comparisons, TensorShape assertions (TF1 semantics) ----------------------------------

def test_dimension_reflected_arithmetic_and_modulo():
    from adplace.framework.tensor_shape import Dimension
    d = Dimension(12)
    assert (13 - d).value == 1 and (2 // d).value == 0 and (30 % d).value == 6 and (d % 5).value == 2
    assert d * [0] == [0] * 12                        # a list is repeated, as with an int
    assert (Dimension(None) - 3).value is None
    with pytest.raises(TypeError, match="please use // instead"):
        d / 2


def test_dimension_comparisons_are_none_when_unknown_and_false_for_non_dimensions():
    from adplace.framework.tensor_shape import Dimension
    assert Dimension(3) < Dimension(4) and Dimension(4) >= 4 and not Dimension(4) <= 3
    assert (Dimension(None) < Dimension(1)) is None and (Dimension(2) >= Dimension(None)) is None
    assert (Dimension(12) == "12") is True and (Dimension(12) == 12.0) is True
    assert (Dimension(12) == "x") is False and (Dimension(12) != "x") is True
    assert (Dimension(12) == 12.5) is False                      # ambiguous: not a dimension
    assert (Dimension(None) == None) is None  # noqa: E711 - TF1: undecidable
    with pytest.raises(ValueError, match="Ambiguous dimension: 12.5"):
        Dimension(12.5)


def test_as_dimension_and_dimension_value():
    from adplace.framework.tensor_shape import Dimension, as_dimension, dimension_value
    d = Dimension(5)
    assert as_dimension(d) is d and as_dimension(5) == d and as_dimension(None).value is None
    assert dimension_value(d) == 5 and dimension_value(7) == 7 and dimension_value(Dimension(None)) is None


def test_tensor_shape_assertions():
    shape = tf.TensorShape([3, None])
    shape.assert_has_rank(2)
    shape.assert_same_rank([1, 1])
    tf.TensorShape(None).assert_has_rank(4)                     # unknown rank: nothing to check
    with pytest.raises(ValueError, match=r"Shape \(3, \?\) is not fully defined"):
        shape.assert_is_fully_defined()
    with pytest.raises(ValueError, match=r"must have rank 3"):
        shape.assert_has_rank(3)
    with pytest.raises(ValueError, match="must have the same rank"):
        shape.assert_same_rank([1])
    assert shape.with_rank_at_least(1) is shape and shape.with_rank_at_most(2) is shape
    with pytest.raises(ValueError, match="rank at least 3"):
        shape.with_rank_at_least(3)
    with pytest.raises(ValueError, match="rank at most 1"):
        shape.with_rank_at_most(1)


def test_most_specific_compatible_shape():
    def msc(a, b):
        return tf.TensorShape(a).most_specific_compatible_shape(tf.TensorShape(b)).dims
    assert msc([1, 2], None) is None and msc([1, 2], [1, 2, 3]) is None
    assert tf.TensorShape([None, 2, 3]).most_specific_compatible_shape([1, 1, 3]).as_list() == [None, None, 3]


def test_tensor_shape_helpers_strings_and_inequality():
    from adplace.framework import tensor_shape as ts
    assert ts.scalar().as_list() == [] and ts.vector(7).as_list() == [7] and ts.matrix(3, None).as_list() == [3, None]
    assert str(ts.unknown_shape(ndims=2)) == "(?, ?)"
    with pytest.raises(TypeError, match="A string has ambiguous TensorShape"):
        tf.TensorShape("347")
    assert (tf.TensorShape([3, 4, 7]) == "347") is False and tf.TensorShape([3, 4, 7]) == ["3", "4", "7"]
    assert tf.TensorShape([1]) != tf.TensorShape([2])
    with pytest.raises(ValueError, match="inequality of unknown TensorShapes is undefined"):
        tf.TensorShape(None) != tf.TensorShape([1])  # noqa: B015 - TF1 raises here
    assert (tf.TensorShape([1]) + tf.TensorShape([2])).as_list() == [1, 2]


def test_dtype_str_is_tf_message_form_and_repr_is_tf_name():
    assert str(tf.float32) == "<dtype: 'float32'>" and repr(tf.float32) == "tf.float32"
    assert "%s" % tf.int32_ref == "<dtype: 'int32_ref'>" and f"{[tf.int64]}" == "[tf.int64]"
