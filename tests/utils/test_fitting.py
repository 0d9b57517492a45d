"""longest_fitting_prefix: the most leading items that fit, in O(log n) tests."""

from __future__ import annotations

import pytest

from ucs.utils.fitting import longest_fitting_prefix


@pytest.mark.parametrize("n", [0, 1, 2, 7, 10, 33])
def test_finds_the_largest_fitting_count_with_few_tests(n):
    for cut in range(n + 1):
        asked = []

        def fits(k):
            asked.append(k)
            return k <= cut

        assert longest_fitting_prefix(n, fits) == cut
        assert len(asked) <= 1 + max(1, n).bit_length()  # the whole, then a binary search
        if cut == n:
            assert asked in ([], [n])  # a sequence that fits costs one test (none when empty)


def test_nothing_fits_gives_zero_and_a_negative_count_is_refused():
    assert longest_fitting_prefix(5, lambda k: False) == 0
    with pytest.raises(ValueError, match="non-negative"):
        longest_fitting_prefix(-1, lambda k: True)
