"""What a row is: the tables' schemas (:mod:`.schema`), region names, counter names,
validation, derived features, bounds, units, workflow metadata and the schema files
written for users (:mod:`.schema_files`). Imports only the shared base.
"""

from __future__ import annotations

__all__: list[str] = []
