"""pqsimd: where does the speedup of an optimized post-quantum implementation come from?"""

__version__ = "0.1.0"
