"""memrank's benchmark harness: ``python -m bench`` prints a table and writes bench/results.json."""

# The process settings of the `memrank` command, before numpy loads, here in the bench process too (and
# inherited by the servers it starts), so in-process timings see what a server sees: one BLAS thread per
# process (OpenBLAS's idle threads left spinning by the LangChain baseline took the core from the server's
# calls) and glibc keeping freed memory for the next call (memrank.system.defaults).
from memrank.system import defaults

defaults.apply()
