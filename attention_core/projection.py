"""Queries and keys as arrows in a plane: a 2-D principal-component projection through numpy's SVD. No Qt.

Why *uncentred* by default: the Vector view draws every vector as an arrow from the origin, and a dot product is
"how far one arrow reaches along another" measured from that origin. The uncentred projection is a linear,
orthogonal map ``x -> x @ components.T``: the origin stays the origin, a drawn arrow is the shadow of the true
vector on the plane, and a weighted average of vectors (an output row, whose weights sum to 1) lands on the
weighted average of their shadows. Its axes are the right singular vectors of the stacked rows themselves, and
``explained_ratio`` is each axis's share of the total squared length ``Σ‖row‖²`` (the "explained variance" of
an uncentred PCA). ``centre=True`` gives the textbook PCA (the mean removed first) for other uses.

With d ≤ 2 nothing is projected: the axes are the coordinate axes and the coordinates are the numbers themselves
(``exact`` is True; with d = 1 the second coordinate is 0).

    >>> import numpy as np
    >>> p = pca_2d(np.vstack([q, k]))        # Q and K together, one plane for both
    >>> q2, k2 = p.coords[:len(q)], p.coords[len(q):]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Projection:
    """A 2-D view of d-dimensional rows.

    ``components`` (2, d): the two unit axes (rows); ``explained_ratio`` (2,): each axis's share of the total
    squared length (centred: of the variance), in [0, 1]; ``coords`` (n, 2): the projected rows; ``mean`` (d,): what
    was subtracted (zeros unless centred); ``exact``: d ≤ 2, the coordinates are the numbers themselves."""

    components: np.ndarray
    explained_ratio: np.ndarray
    coords: np.ndarray
    mean: np.ndarray
    exact: bool

    @property
    def kept(self) -> float:
        """The share of the total squared length (variance) the plane keeps: 1.0 when exact."""
        return float(self.explained_ratio.sum())

    def project(self, points: np.ndarray) -> np.ndarray:
        """More rows (or one vector) in the same plane: ``(points - mean) @ components.T``."""
        pts = np.asarray(points, dtype=np.float64)
        return (pts - self.mean) @ self.components.T


def pca_2d(points: np.ndarray, *, centre: bool = False) -> Projection:
    """The best 2-D plane for ``points`` (n, d) by the SVD, uncentred unless ``centre`` (see the module's text).

    Each axis's sign is fixed so that its largest-magnitude entry is positive (an SVD's signs are arbitrary; a
    view that jumped mirror-wise on every edit would be unreadable). Raises ``ValueError`` for anything but a
    finite 2-D array with at least one column."""
    x = np.asarray(points, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(f"pca_2d needs an (n, d) array with d >= 1, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("pca_2d needs finite numbers")
    n, d = x.shape
    mean = x.mean(axis=0) if centre and n else np.zeros(d)
    xc = x - mean
    # shares and axes do not depend on the overall size: work on a copy scaled to max |x| = 1, so squares of
    # huge entries (up to ~1e300 in the playground) never overflow
    big = float(np.abs(xc).max(initial=0.0))
    unit = xc / big if big > 0 else xc
    total = float((unit ** 2).sum())
    if d <= 2:
        components = np.eye(2, d)
        per_axis = ((unit @ components.T) ** 2).sum(axis=0)
        ratio = per_axis / total if total > 0 else np.zeros(2)
        return Projection(components, ratio, xc @ components.T, mean, exact=True)
    if n == 0:
        return Projection(np.eye(2, d), np.zeros(2), np.zeros((0, 2)), mean, exact=False)
    _u, s, vt = np.linalg.svd(unit, full_matrices=True)
    components = vt[:2].copy()
    for row in components:
        if row[np.argmax(np.abs(row))] < 0:
            row *= -1.0
    s2 = np.zeros(2)
    s2[: min(2, s.size)] = (s ** 2)[:2]
    ratio = s2 / total if total > 0 else np.zeros(2)
    return Projection(components, ratio, xc @ components.T, mean, exact=False)
