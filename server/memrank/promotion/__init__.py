"""`memrank promote`: a tuned profile into the served config, a ConfigMap (Kubernetes API) or a file.

``merge`` sets the serving profile's weights from the file `memrank tune`
wrote and proves the result loads; ``kube`` reads and conditionally patches
one ConfigMap's data key with the pod's service account; ``cli`` is the
subcommand. The pods pick the change up by reloading (``lifecycle.reload``).
"""

from __future__ import annotations

from memrank.promotion.merge import Merged, PromotionError, merge, tuned_entry

__all__ = ["Merged", "PromotionError", "merge", "tuned_entry"]
