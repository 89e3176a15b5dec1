"""``xamm schedule-sim``: what predictions buy a scheduler (the few-shot adaptation paper's 71%
turnaround claim), simulated.

A job queue over heterogeneous machines, each with a number of nodes; a job takes one node. Jobs
arrive as a seeded Poisson stream and are dispatched at arrival, first come first served on each
machine, never preempted (an online list scheduler; the simulation advances job by job in arrival
order, which is exact for this policy). Each policy keeps its own *belief* of when every node frees
up, built from the durations it believes; the jobs then run their *true* durations:

* ``oracle``: the same earliest-completion rule knowing the true duration on every machine (an
  online greedy rule, not an optimal schedule: it can lose to ``least-loaded`` on a queue it
  overfills);
* ``predicted`` (and any other named prediction, e.g. ``adapted``): earliest completion by predicted
  durations;
* ``least-loaded``: the machine with the fewest unfinished jobs per node (observable at dispatch),
  no durations;
* ``random``: a node chosen uniformly at random.

Reported per policy: mean turnaround (completion - arrival) and makespan (last completion - first
arrival).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Job:
    """One job: its arrival time and its duration on every machine, true and as each predictor
    believes."""

    arrival: float
    true: dict[str, float]
    # predictor name -> machine -> seconds
    believed: dict[str, dict[str, float]] = field(default_factory=dict)
    # the profiled sample the job runs, and its kernel (empty when made by hand)
    sample: str = ""
    app: str = ""


def arrivals(
    n: int, durations: np.ndarray, nodes: dict[str, int], load: float, seed: int
) -> np.ndarray:
    """Poisson arrival times for ``n`` jobs offering ``load`` times the cluster's capacity, where a
    job costs its best duration (``durations``: each job's shortest true duration)."""
    rate = load * sum(nodes.values()) / float(np.mean(durations))
    return np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, n))


def _choose(policy: str, job: Job, belief: dict[str, list[float]], rng) -> str:
    machines = sorted(belief)
    if policy == "random":
        return rng.choice([m for m in machines for _ in belief[m]])
    if policy == "least-loaded":
        return min(
            machines, key=lambda m: (sum(t > job.arrival for t in belief[m]) / len(belief[m]), m)
        )
    dur = job.true if policy == "oracle" else job.believed[policy]
    return min(machines, key=lambda m: (max(job.arrival, belief[m][0]) + dur[m], m))


def simulate(
    jobs: list[Job], nodes: dict[str, int], policy: str, seed: int = 0
) -> dict[str, float]:
    """Dispatch jobs (in arrival order) by a policy and run them their true durations.

    Args:
        jobs: the jobs.
        nodes: machine -> node count.
        policy: ``oracle``, ``predicted``, ``least-loaded``, ``random`` or a named prediction.
        seed: the seed (``random``).

    Returns:
        Mean turnaround and makespan.
    """
    rng = np.random.default_rng(seed)
    actual = {m: [0.0] * n for m, n in nodes.items()}  # min-heaps of node free times
    belief = {m: [0.0] * n for m, n in nodes.items()}
    done = []
    for job in sorted(jobs, key=lambda j: j.arrival):
        m = _choose(policy, job, belief, rng)
        guess = (
            job.true[m]
            if policy in ("oracle", "random", "least-loaded")
            else job.believed[policy][m]
        )
        b = heapq.heappop(belief[m])
        heapq.heappush(belief[m], max(job.arrival, b) + guess)
        free = heapq.heappop(actual[m])
        end = max(job.arrival, free) + job.true[m]
        heapq.heappush(actual[m], end)
        done.append((job.arrival, end))
    a, e = np.array(done).T
    return {"mean_turnaround_s": float(np.mean(e - a)), "makespan_s": float(e.max() - a.min())}


def compare(jobs: list[Job], nodes: dict[str, int], *, seed: int = 0) -> list[dict]:
    """Every policy on the same jobs: oracle, each predictor the jobs carry, least-loaded,
    random."""
    predictors = sorted({p for j in jobs for p in j.believed})
    return [
        {"policy": p, **simulate(jobs, nodes, p, seed=seed)}
        for p in ("oracle", *predictors, "least-loaded", "random")
    ]
