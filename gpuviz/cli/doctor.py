"""``gpuviz doctor``: :mod:`gpuviz.doctor`'s checks, printed with the fix for each problem."""

from __future__ import annotations

from .. import doctor


def main(args) -> int:
    return doctor.main()
