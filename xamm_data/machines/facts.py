"""The public facts of a node the machine registry records, and what each means: apart from the
registry, so that a command line offers them without loading it."""

from __future__ import annotations

__all__ = ["COUNTS", "NODE_FACTS"]

NODE_FACTS: tuple[tuple[str, str], ...] = (
    ("sockets", "CPU sockets (or APU packages) a node"),
    ("cores_per_node", "CPU cores a node"),
    ("memory_gib", "CPU memory a node, GiB"),
    ("memory_bandwidth_gbs", "peak CPU memory bandwidth a node, GB/s"),
    ("cache_mib", "last-level cache of all sockets, MiB"),
    ("peak_gflops", "peak double-precision CPU rate a node, GFLOP/s"),
    ("gpus_per_node", "GPUs a node"),
    ("gpu_memory_gib", "memory a GPU, GiB"),
    ("gpu_memory_bandwidth_gbs", "peak memory bandwidth a GPU, GB/s"),
    ("gpu_cache_mib", "last-level cache a GPU, MiB"),
    ("gpu_peak_gflops", "peak double-precision rate a GPU, GFLOP/s"),
    ("processor_cores", "CPU cores a processor, where the node is not known"),
    ("processor_memory_bandwidth_gbs", "peak memory bandwidth a processor, GB/s"),
    ("processor_cache_mib", "last-level cache a processor, MiB"),
    ("processor_peak_gflops", "peak double-precision rate a processor, GFLOP/s"),
)

#: the facts that are counts (integers), the others figures
COUNTS = ("sockets", "cores_per_node", "gpus_per_node", "processor_cores")
