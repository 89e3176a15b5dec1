"""xamm_models: sample embedders, Abstract Machine Models (Algorithm 1), signatures and predictors.

Needs the ``models`` extra (torch, catboost, xgboost-cpu, scikit-learn).
"""
