"""xamm_models: embedders, Abstract Machine Models and predictors of the xAMM method.

Not implemented yet (issues 5 and 6). The package exists so the layout of the design card is in
place; importing anything from it beyond this docstring will fail until those issues land.
"""
