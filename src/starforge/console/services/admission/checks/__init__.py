"""Policy checks of admission (stage E): each reads a frozen `AdmissionContext` and returns problems."""

from .benchmarks import check_benchmarks
from .bundle import check_bundle
from .cluster_paths import check_cluster_paths
from .data import check_data
from .engines import check_engines
from .gpu_settings import check_gpu_settings
from .image import check_image
from .init_from import check_init_from
from .names import check_names
from .placeable import check_placeable
from .plugins import check_plugins
from .profiles import check_profiles
from .quota import check_quota
from .runtime import check_runtime

__all__ = [
    "check_benchmarks",
    "check_bundle",
    "check_cluster_paths",
    "check_data",
    "check_engines",
    "check_gpu_settings",
    "check_image",
    "check_init_from",
    "check_names",
    "check_placeable",
    "check_plugins",
    "check_profiles",
    "check_quota",
    "check_runtime",
]
