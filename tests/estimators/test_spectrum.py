import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ucs.estimators import (
    k_seen,
    multiplicities,
    spectrum,
    spectrum_from_multiplicities,
    validate_cluster_ids,
)


def test_spectrum_small():
    ids = [7, 7, 7, 3, 3, 9, 11]
    assert multiplicities(ids).tolist() == [2, 3, 1, 1]
    assert spectrum(ids).tolist() == [0, 2, 1, 1]
    assert k_seen(ids) == 4
    assert spectrum([]).tolist() == [0]
    assert spectrum_from_multiplicities([0, 2, 2], length=5).tolist() == [0, 0, 2, 0, 0]


@given(st.lists(st.integers(0, 30), max_size=60))
def test_spectrum_accounts_for_every_item(ids):
    f = spectrum(ids)
    assert int((np.arange(f.size) * f).sum()) == len(ids)
    assert int(f[1:].sum()) == len(set(ids))


@pytest.mark.parametrize(
    "bad, match",
    [
        ([1, -1], "non-negative"),
        ([1.5, 2], "integers"),
        ([np.nan, 1], "NaN"),
        ([[1, 2]], "1-D"),
        (["a", "b"], "integer"),
        ([True, False], "booleans"),
    ],
)
def test_bad_ids_raise_naming_parameter(bad, match):
    with pytest.raises(ValueError, match=match) as exc:
        validate_cluster_ids(bad)
    assert "cluster_ids" in str(exc.value)


def test_integral_floats_are_accepted():
    assert validate_cluster_ids(np.array([1.0, 2.0])).dtype == np.int64
