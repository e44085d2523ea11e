"""pca_2d against numpy's SVD computed here, and the exact 2-D case."""

from __future__ import annotations

import numpy as np
import pytest

from attention_core import Projection, pca_2d


def _same_up_to_sign(a: np.ndarray, b: np.ndarray) -> None:
    for ra, rb in zip(a, b):
        sign = 1.0 if ra @ rb >= 0 else -1.0
        np.testing.assert_allclose(ra, sign * rb, atol=1e-10)


def test_known_set_matches_svd_uncentred():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 5)) * np.array([3.0, 2.0, 0.5, 0.2, 0.1])
    p = pca_2d(x)
    assert isinstance(p, Projection) and not p.exact
    # independent reference: the eigenvectors of XᵀX (uncentred scatter) with the two largest eigenvalues
    evals, evecs = np.linalg.eigh(x.T @ x)
    order = np.argsort(evals)[::-1]
    ref = evecs[:, order[:2]].T
    _same_up_to_sign(p.components, ref)
    np.testing.assert_allclose(p.explained_ratio, evals[order[:2]] / (x ** 2).sum(), rtol=1e-10)
    np.testing.assert_allclose(p.coords, x @ p.components.T, atol=1e-12)
    np.testing.assert_allclose(p.components @ p.components.T, np.eye(2), atol=1e-12)
    assert p.kept < 1.0
    # signs are fixed: the largest entry of each axis is positive
    for row in p.components:
        assert row[np.argmax(np.abs(row))] > 0


def test_centred_matches_textbook_pca():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 4)) + np.array([5.0, -2.0, 0.0, 1.0])
    p = pca_2d(x, centre=True)
    xc = x - x.mean(axis=0)
    _u, s, vt = np.linalg.svd(xc, full_matrices=False)
    _same_up_to_sign(p.components, vt[:2])
    np.testing.assert_allclose(p.explained_ratio, s[:2] ** 2 / (s ** 2).sum(), rtol=1e-10)
    np.testing.assert_allclose(p.mean, x.mean(axis=0))
    np.testing.assert_allclose(p.project(x), p.coords, atol=1e-12)


def test_plane_of_rank_two_data_keeps_everything():
    # rows in the span of two directions: the plane keeps 100 % and dot products survive exactly
    rng = np.random.default_rng(1)
    basis = np.linalg.qr(rng.standard_normal((6, 2)))[0].T
    x = rng.standard_normal((5, 2)) @ basis
    p = pca_2d(x)
    assert p.kept == pytest.approx(1.0)
    np.testing.assert_allclose(p.coords @ p.coords.T, x @ x.T, atol=1e-10)


def test_two_dimensions_are_exact():
    x = np.array([[3.0, 1.0], [3.0, 1.0], [1.0, 4.0], [1.5, 0.5]])
    p = pca_2d(x)
    assert p.exact
    np.testing.assert_array_equal(p.coords, x)  # the identity: no rotation, no sign flip
    np.testing.assert_array_equal(p.components, np.eye(2))
    assert p.kept == pytest.approx(1.0)
    np.testing.assert_allclose(p.explained_ratio, (x ** 2).sum(axis=0) / (x ** 2).sum())


def test_one_dimension_and_degenerate_input():
    p = pca_2d(np.array([[2.0], [-1.0]]))
    assert p.exact
    np.testing.assert_array_equal(p.coords, [[2.0, 0.0], [-1.0, 0.0]])
    zero = pca_2d(np.zeros((3, 4)))
    np.testing.assert_array_equal(zero.explained_ratio, [0.0, 0.0])
    np.testing.assert_array_equal(zero.coords, np.zeros((3, 2)))
    with pytest.raises(ValueError):
        pca_2d(np.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        pca_2d(np.array([[np.nan, 1.0, 2.0]]))


def test_huge_entries_do_not_overflow():
    import warnings

    x = np.array([[1e150, 2e150, 0.0], [3e149, -1e150, 5e149]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = pca_2d(x)
    small = pca_2d(x / 1e150)
    np.testing.assert_allclose(p.explained_ratio, small.explained_ratio, rtol=1e-12)
    np.testing.assert_allclose(p.coords / 1e150, small.coords, rtol=1e-10, atol=1e-12)
