"""``xamm run``: the config-driven pipeline of the xAMM paper (Listing 1)."""

from __future__ import annotations

from xamm_data.cli.tools import path_arg
from xamm_models.cli.common import RAW, needs_models


def add(sub) -> None:
    """``xamm run CONFIG``."""
    r = sub.add_parser(
        "run",
        help="the config-driven pipeline (paper Listing 1): func amm|train|test",
        epilog=(
            "examples:\n  xamm run config.yml\n\nfields: see xamm_models.predictors.paper.pipeline"
        ),
        formatter_class=RAW,
    )
    r.add_argument("config", type=path_arg)
    r.set_defaults(handler=needs_models(run_config))


def run_config(args) -> int:
    # in the handler: `xamm --help` never loads the models
    from xamm_models.predictors.paper.pipeline import load_config

    # in the handler, as above
    from xamm_models.predictors.paper.pipeline import run as run_pipeline

    run_pipeline(load_config(args.config))
    return 0
