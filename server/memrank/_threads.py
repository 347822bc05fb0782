"""One BLAS/OpenMP thread per process, set before numpy loads (imported first by the ``memrank`` command).

A memrank process scores one request at a time on one core; parallelism comes from worker processes
(``server.workers``), which inherit this environment. A multi-threaded BLAS would spin its threads against
the other workers on a busy host (the similarity rows of the diversity pass are BLAS matvecs). Only a
default: a variable already set in the environment wins.
"""

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
