"""TF's array and proto assertions for tf.test.TestCase (assertAllClose, assertAllEqual, assertAllInRange,
assertProtoEquals, ...) and absltest's container assertions (assertLen, assertSameElements, ...), as a mixin:
Tensors anywhere in an argument are evaluated, all in one run, by the test case's `evaluate`.

    class T(tf.test.TestCase):                  # TensorFlowTestCase mixes ArrayAssertions in
        def testOnes(self):
            self.assertAllClose(tf.ones([2]), [1.0, 1.0])   # passes: the Tensor is evaluated first
"""
from __future__ import annotations

import unittest
from collections.abc import Mapping

import numpy as np


def _leaves(value):
    """The leaves of nested lists, tuples and mappings, depth first."""
    if isinstance(value, Mapping):
        value = value.values()
    elif not isinstance(value, (list, tuple)):
        yield value
        return
    for item in value:
        yield from _leaves(item)


def _replace_leaves(value, replace):
    """`value` with each leaf (neither list, tuple nor mapping) passed through `replace`; containers keep type."""
    if isinstance(value, Mapping):
        return {k: _replace_leaves(v, replace) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)._make(_replace_leaves(v, replace) for v in value)
    if isinstance(value, (list, tuple)):
        return type(value)(_replace_leaves(v, replace) for v in value)
    return replace(value)


class ArrayAssertions:
    """TF's array assertions and absltest's extras on top of unittest; Tensors anywhere in an argument are
    evaluated (together, in one run) in the default session or the test's cached session. The class it is mixed
    into supplies `evaluate(tensors)` and `_is_tensor_like(value)`."""

    def _evaluated(self, *values):
        """`values` with every Tensor or Variable in them replaced by its value, all fetched in one run."""
        found = [v for v in _leaves(values) if self._is_tensor_like(v)]
        if not found:
            return values
        results = iter(self.evaluate(found))
        return _replace_leaves(values, lambda v: next(results) if self._is_tensor_like(v) else v)

    def _GetNdArray(self, a) -> np.ndarray:  # noqa: N802 - TF's name
        if self._is_tensor_like(a):
            a = self.evaluate(a)
        if isinstance(a, np.ndarray):
            return a
        try:
            return np.array(a)
        except ValueError as e:  # ragged nesting: NumPy >= 1.24 no longer makes an object array by itself
            if "inhomogeneous" in str(e):
                return np.array(a, dtype=object)
            raise

    # --- closeness --------------------------------------------------------------------------------------------
    def _assertArrayLikeAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802 - TF's name
        a, b = self._GetNdArray(a), self._GetNdArray(b)
        contents = f" with contents {b}" if b.ndim <= 3 or b.size < 500 else ""
        self.assertEqual(a.shape, b.shape, f"Shape mismatch: expected {a.shape}, got {b.shape}{contents}.")
        if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            return
        bad = np.logical_or(np.abs(a - b) > atol + rtol * np.abs(b), np.isnan(a) != np.isnan(b))
        lines = [msg or ""]
        if a.ndim:
            where = np.where(bad)
            x, y = a[where], b[where]
            lines.append(f"not close where = {where}")
        else:
            x, y = a, b
        lines += [f"not close lhs = {x}", f"not close rhs = {y}", f"not close dif = {np.abs(x - y)}",
                  f"not close tol = {atol + rtol * np.abs(y)}", f"dtype = {a.dtype}, shape = {a.shape}"]
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg="\n".join(lines), equal_nan=True)

    def _assertAllCloseRecursive(self, a, b, rtol=1e-6, atol=1e-6, path=None, msg=None):  # noqa: N802
        path = path or []
        where = "[" + "][".join(str(p) for p in path) + "]" if path else ""
        msg = msg or ""
        a = a._asdict() if hasattr(a, "_asdict") else a
        b = b._asdict() if hasattr(b, "_asdict") else b
        a_is_dict = isinstance(a, Mapping)
        if a_is_dict != isinstance(b, Mapping):
            raise ValueError(f"Can't compare dict to non-dict, a{where} vs b{where}. {msg}")
        mismatch = f"Mismatched value: a{where} is different from b{where}. {msg}"
        if a_is_dict:
            self.assertCountEqual(a.keys(), b.keys(), msg=f"mismatched keys: a{where} has keys {a.keys()}, but "
                                                          f"b{where} has keys {b.keys()}. {msg}")
            for key in a:
                self._assertAllCloseRecursive(a[key], b[key], rtol, atol, path + [key], msg)
        elif isinstance(a, (list, tuple)):
            try:  # as one array when the nesting is regular; item by item otherwise
                self._assertArrayLikeAllClose(self._GetNdArray(a), self._GetNdArray(b), rtol, atol, mismatch)
            except (ValueError, TypeError):
                if len(a) != len(b):
                    raise ValueError(f"Mismatched length: a{where} has {len(a)} items, but b{where} has {len(b)} "
                                     f"items. {msg}") from None
                for i, (a_item, b_item) in enumerate(zip(a, b)):
                    self._assertAllCloseRecursive(a_item, b_item, rtol, atol, path + [str(i)], msg)
        else:
            try:
                self._assertArrayLikeAllClose(a, b, rtol, atol, mismatch)
            except TypeError as e:
                e.args = (f"{e.args[0] if e.args else ''} : Error: a{where} has {type(a)}, but b{where} has "
                          f"{type(b)}. {msg}",) + e.args[1:]
                raise

    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802 - TF's name
        """Assert that two values, or nested dicts/lists/tuples/namedtuples of values, are elementwise close:
        |a - b| <= atol + rtol * |b| (NaN matches NaN). Tensors are evaluated first.

        ValueError if only one side is a dict at some path, or lists there differ in length; the failure message
        names the path ("a[1][w] is different from b[1][w]") and the elements that differ.
        """
        a, b = self._evaluated(a, b)
        self._assertAllCloseRecursive(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertAllCloseAccordingToType(self, a, b, rtol=1e-6, atol=1e-6, float_rtol=1e-6,  # noqa: N802
                                      float_atol=1e-6, half_rtol=1e-3, half_atol=1e-3, bfloat16_rtol=1e-2,
                                      bfloat16_atol=1e-2, msg=None):
        """assertAllClose with tolerances widened by dtype: float32/complex64 to float_*, float16 to half_*
        (1e-3), bfloat16 to bfloat16_* (1e-2)."""
        a, b = (self._GetNdArray(v) for v in self._evaluated(a, b))
        dtypes = {a.dtype, b.dtype}
        if dtypes & {np.dtype(np.float32), np.dtype(np.complex64)}:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if np.dtype(np.float16) in dtypes:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        if any(d.name == "bfloat16" for d in dtypes):
            rtol, atol = max(rtol, bfloat16_rtol), max(atol, bfloat16_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertNotAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):  # noqa: N802 - TF's name
        """Assert that assertAllClose(a, b, ...) would fail."""
        try:
            self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)
        except AssertionError:
            return
        raise AssertionError(f"The two values are close at all elements. {msg or ''}")

    # --- equality and order -----------------------------------------------------------------------------------
    def assertAllEqual(self, a, b, msg=None):  # noqa: N802 - TF's name
        """Assert equal shapes and elementwise equal values (NaN equals NaN in float arrays)."""
        msg = msg or ""
        a, b = (self._GetNdArray(v) for v in self._evaluated(a, b))
        contents = f" Contents: {b!r}. \n{msg}." if b.ndim <= 3 or b.size < 500 else f" {msg}"
        self.assertEqual(a.shape, b.shape, f"Shape mismatch: expected {a.shape}, got {b.shape}.{contents}")
        same = a == b
        if np.issubdtype(a.dtype, np.floating) and np.issubdtype(b.dtype, np.floating):
            same = np.logical_or(same, np.logical_and(np.isnan(a), np.isnan(b)))
        if np.all(same):
            return
        lines = [msg]
        if a.ndim:
            where = np.where(np.logical_not(same))
            x, y = a[where], b[where]
            lines.append(f"not equal where = {where}")
        else:
            x, y = a, b
        lines += [f"not equal lhs = {x!r}", f"not equal rhs = {y!r}"]
        if a.dtype.kind != b.dtype.kind and {a.dtype.kind, b.dtype.kind} <= {"U", "S", "O"}:
            a, b = (np.array([s.encode() if isinstance(s, str) else s for s in v.flat]).reshape(v.shape)
                    for v in (a, b))
        np.testing.assert_array_equal(a, b, err_msg="\n".join(lines))  # the verdict, after bytes/str conversion

    def assertNotAllEqual(self, a, b, msg=None):  # noqa: N802 - TF's name
        """Assert that assertAllEqual(a, b) would fail."""
        try:
            self.assertAllEqual(a, b)
        except AssertionError:
            return
        raise AssertionError(f"The two values are equal at all elements. {msg or ''}")

    def assertAllGreater(self, a, comparison_target):  # noqa: N802 - TF's name
        self.assertGreater(np.min(self._GetNdArray(a)), comparison_target)

    def assertAllLess(self, a, comparison_target):  # noqa: N802 - TF's name
        self.assertLess(np.max(self._GetNdArray(a)), comparison_target)

    def assertAllGreaterEqual(self, a, comparison_target):  # noqa: N802 - TF's name
        self.assertGreaterEqual(np.min(self._GetNdArray(a)), comparison_target)

    def assertAllLessEqual(self, a, comparison_target):  # noqa: N802 - TF's name
        self.assertLessEqual(np.max(self._GetNdArray(a)), comparison_target)

    @staticmethod
    def _format_subscripts(subscripts, value, limit: int = 10, indent: int = 2) -> list[str]:
        """Up to `limit` lines "  [i j] : value" for the elements at `subscripts` (np.where's form)."""
        prefix = " " * indent
        if np.ndim(value) == 0:
            return [f"{prefix}[0] : {value}"]
        rows = np.transpose(subscripts)
        lines = [f"{prefix}{row} : {value[tuple(row)]}" for row in rows[:limit]]
        return lines + [prefix + "..."] if len(rows) > limit else lines

    def assertAllInRange(self, target, lower_bound, upper_bound, open_lower_bound=False,  # noqa: N802
                         open_upper_bound=False):
        """Assert every element is in [lower, upper] (or open at either end); NaNs and non-numbers fail."""
        target = self._GetNdArray(target)
        if not (np.issubdtype(target.dtype, np.floating) or np.issubdtype(target.dtype, np.integer)):
            raise AssertionError(f"The value of {target} does not have an ordered numeric type, instead it has "
                                 f"type: {target.dtype}")
        nans = np.where(np.isnan(target))
        if np.size(nans):
            raise AssertionError(f"{len(nans[0])} of the {np.size(target)} element(s) are NaN. Subscripts(s) and "
                                 "value(s) of the NaN element(s):\n" + "\n".join(self._format_subscripts(nans, target)))
        below = target <= lower_bound if open_lower_bound else target < lower_bound
        above = target >= upper_bound if open_upper_bound else target > upper_bound
        outside = np.where(np.logical_or(below, above))
        if np.size(outside):
            interval = f"{'(' if open_lower_bound else '['}{lower_bound}, {upper_bound}{')' if open_upper_bound else ']'}"
            raise AssertionError(f"{len(outside[0])} of the {np.size(target)} element(s) are outside the range "
                                 f"{interval}. Subscript(s) and value(s) of the offending elements:\n"
                                 + "\n".join(self._format_subscripts(outside, target)))

    def assertAllInSet(self, target, expected_set):  # noqa: N802 - TF's name
        """Assert every element of `target` is in `expected_set` (a list, tuple or set)."""
        extra = np.setdiff1d(self._GetNdArray(target).flatten(), list(expected_set))
        if np.size(extra):
            raise AssertionError(f"{np.size(extra)} unique element(s) are not in the set {expected_set}: {extra}")

    def assertNear(self, f1, f2, err, msg=None):  # noqa: N802 - TF's name
        """Assert |f1 - f2| <= err (equal infinities pass)."""
        self.assertTrue(f1 == f2 or abs(f1 - f2) <= err,
                        "%f != %f +/- %f%s" % (f1, f2, err, f" ({msg})" if msg is not None else ""))

    def assertArrayNear(self, farray1, farray2, err, msg=None):  # noqa: N802 - TF's name
        """assertNear on each pair of elements of two equally long float sequences."""
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def _NDArrayNear(self, ndarray1, ndarray2, err) -> bool:  # noqa: N802 - TF's name
        return bool(np.linalg.norm(ndarray1 - ndarray2) < err)

    def assertNDArrayNear(self, ndarray1, ndarray2, err, msg=None):  # noqa: N802 - TF's name
        """Assert the Frobenius norm of ndarray1 - ndarray2 is below `err`."""
        self.assertTrue(self._NDArrayNear(ndarray1, ndarray2, err), msg=msg)

    # --- absltest's extras that TF tests use ------------------------------------------------------------------
    assertItemsEqual = unittest.TestCase.assertCountEqual  # noqa: N815 - TF's name
    assertRaisesRegexp = unittest.TestCase.assertRaisesRegex  # noqa: N815 - TF's name
    assertRegexpMatches = unittest.TestCase.assertRegex  # noqa: N815 - TF's name

    def assertStartsWith(self, actual, expected_start, msg=None):  # noqa: N802 - TF's name
        if not actual.startswith(expected_start):
            self.fail(f"{actual!r} does not start with {expected_start!r}" + (f" : {msg!r}" if msg else ""))

    def assertEndsWith(self, actual, expected_end, msg=None):  # noqa: N802 - absltest's name
        if not actual.endswith(expected_end):
            self.fail(f"{actual!r} does not end with {expected_end!r}" + (f" : {msg!r}" if msg else ""))

    def assertLen(self, container, expected_len, msg=None):  # noqa: N802 - absltest's name
        if len(container) != expected_len:
            self.fail(f"{container!r} has length of {len(container)}, expected {expected_len}."
                      + (f" : {msg}" if msg else ""))

    def assertEmpty(self, container, msg=None):  # noqa: N802 - absltest's name
        if len(container):
            self.fail(f"{container!r} has length of {len(container)}." + (f" : {msg}" if msg else ""))

    def assertNotEmpty(self, container, msg=None):  # noqa: N802 - absltest's name
        if not len(container):
            self.fail(f"{container!r} has length of 0." + (f" : {msg}" if msg else ""))

    def assertSameElements(self, expected_seq, actual_seq, msg=None):  # noqa: N802 - absltest's name
        """Assert both sequences hold the same set of elements (counts ignored)."""
        missing = [x for x in expected_seq if x not in actual_seq]
        unexpected = [x for x in actual_seq if x not in expected_seq]
        if missing or unexpected:
            self.fail(f"Expected, but missing:\n  {missing!r}\nUnexpected, but present:\n  {unexpected!r}"
                      + (f" : {msg}" if msg else ""))

    def assertContainsSubset(self, expected_subset, actual_set, msg=None):  # noqa: N802 - absltest's name
        missing = set(expected_subset) - set(actual_set)
        if missing:
            self.fail(f"Missing elements {missing!r}" + (f" : {msg}" if msg else ""))

    def assertNoCommonElements(self, expected_seq, actual_seq, msg=None):  # noqa: N802 - absltest's name
        common = set(expected_seq) & set(actual_seq)
        if common:
            self.fail(f"Common elements {common!r}" + (f" : {msg}" if msg else ""))

    def assertBetween(self, value, minv, maxv, msg=None):  # noqa: N802 - absltest's name
        if not minv <= value <= maxv:
            self.fail(f"{value!r} is not between {minv!r} and {maxv!r}" + (f" : {msg}" if msg else ""))

    def assertProtoEquals(self, expected_message_maybe_ascii, message, msg=None):  # noqa: N802 - TF's name
        """`message` equals the expected proto, given as a message of its type or in protobuf text format."""
        from google.protobuf import message as _message
        from google.protobuf import text_format

        if isinstance(expected_message_maybe_ascii, (str, bytes)):
            expected = type(message)()
            text = expected_message_maybe_ascii
            text_format.Merge(text.decode() if isinstance(text, bytes) else text, expected)
        elif isinstance(expected_message_maybe_ascii, _message.Message):
            expected = expected_message_maybe_ascii
        else:
            raise AssertionError(f"Can't compare protos of type {type(expected_message_maybe_ascii)} and "
                                 f"{type(message)}.")
        if expected != message:
            self.assertMultiLineEqual(text_format.MessageToString(expected), text_format.MessageToString(message),
                                      msg)

    def assertProtoEqualsVersion(self, expected, actual, producer=None, min_consumer=None,  # noqa: N802
                                 msg=None):
        """`actual` (a GraphDef) equals `expected` (text) with adplace's GraphDef versions prepended (TF's helper)."""
        from adplace.framework import graph_io

        producer = graph_io.GRAPH_DEF_VERSION if producer is None else producer
        min_consumer = graph_io.GRAPH_DEF_VERSION_MIN_CONSUMER if min_consumer is None else min_consumer
        self.assertProtoEquals(f"versions {{ producer: {producer} min_consumer: {min_consumer} }};\n{expected}",
                               actual, msg=msg)
