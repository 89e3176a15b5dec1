import time
from pathlib import Path

from xamm_data.plugins import load
from xamm_data.store.store import as_store
from xamm_models.benchmark import dataset as xplat

t = time.time()
st = as_store("/tmp/lx/xstore")
print(xplat.ingest_sources("../shared/data", st))
ingest = load("xamm.ingest", "rajaperf", "x")
rep = ingest(
    Path("../shared/data/LLNL+thicket-newer/thicket/tests/data/rajaperf/dane"),
    machine="dane",
    store=st,
    workers=2,
    progress=False,
)
print(rep.frame.height, rep.rejected, time.time() - t)
