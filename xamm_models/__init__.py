"""xamm_models: sample embedders, Abstract Machine Models (Algorithm 1) and their signatures.

Needs the ``models`` extra (torch). Predictors (issue 6) are not implemented yet.
"""
