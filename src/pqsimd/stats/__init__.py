"""The statistics of pqsimd, apart from studies: estimators, intervals, bootstrap draws, multiplicity,
power, the regime, drift and clock-lattice tests, and the cliff rule's numbers.

Every module here takes numbers (numpy arrays, plain values) and returns numbers; none reads a file,
knows a study's records or imports anything of pqsimd outside this package. analyze/ feeds them a
study's records; each is tested against a library or brute force (tests/test_stats_*.py; pooled,
moderation and power against statsmodels and limma in tests/test_analyze_design.py).
"""
