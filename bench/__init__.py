"""memrank's benchmark harness: ``python -m bench`` prints a table and writes bench/results.json."""

import os

# One BLAS thread per process, set before numpy loads (here, in the bench process, and inherited by the
# servers it starts): with a worker per core, OpenBLAS's extra threads only spin against the other
# process; idle threads left spinning by the LangChain baseline took the core from the server's calls.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
