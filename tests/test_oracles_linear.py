"""LinearModel's input validation (logt.oracles.LinearModel): errors that name the remedy."""
import numpy as np
import pytest
import scipy.sparse as sp

from logt.oracles import LinearModel


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_sparse_A_is_refused_with_the_dense_remedy(fmt):
    A = sp.random(200, 30, density=0.1, format=fmt, random_state=0)
    with pytest.raises(TypeError, match=r"scipy.sparse matrix \(200 x 30, 600 stored entries\).*A.toarray\(\)"):
        LinearModel(A, np.ones(200), lam=0.1)
    dense = LinearModel(A.toarray(), np.ones(200), lam=0.1)           # the remedy works
    w = np.full(30, 0.1)
    Ad = A.toarray()
    np.testing.assert_allclose(dense.grad(w), Ad.T @ (Ad @ w - 1.0) / 200 + 0.1 * w, rtol=1e-12)


def test_non_numeric_A_is_a_type_error():
    with pytest.raises(TypeError, match="A must be a real numeric array"):
        LinearModel(np.array([["a", "b"]]), np.ones(1))
