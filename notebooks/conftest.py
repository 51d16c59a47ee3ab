"""pytest configuration for `pytest notebooks --nbval-lax`.

The Korean edition (notebooks/ko/) is built from the English notebooks by scripts/build_korean.py: its
code cells are the English code with translated comments and its outputs are the English run's. nbval
does not run it again; tests/lessons/test_korean.py proves the code is the same.
"""

collect_ignore = ["ko", "practice"]  # practice: the lessons without outputs
