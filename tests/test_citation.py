"""CITATION.cff is valid CFF 1.2.0, checked against the schema shipped by cffconvert."""

from __future__ import annotations

import json
import importlib.util
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cff_validator():
    # find the package without importing it: it is installed without its dependencies, for its schema only
    spec = importlib.util.find_spec("cffconvert")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("cffconvert is not installed; the README's test command installs it (pip install --no-deps cffconvert)")
    schema_file = Path(spec.submodule_search_locations[0]) / "schemas" / "1.2.0" / "schema.json"
    schema = json.loads(schema_file.read_text())
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())


def test_citation_is_valid_cff_1_2_0(cff_validator):
    doc = yaml.safe_load((REPO / "CITATION.cff").read_text())
    errors = sorted(cff_validator.iter_errors(doc), key=str)
    assert not errors, [e.message for e in errors]
    assert doc["cff-version"] == "1.2.0"
    pc = doc["preferred-citation"]
    assert pc["title"].startswith("xAMM")
    assert [a["family-names"] for a in pc["authors"]][0] == "Dhakal"


def test_validator_rejects_a_broken_citation(cff_validator):
    doc = yaml.safe_load((REPO / "CITATION.cff").read_text())
    doc["preferred-citation"]["type"] = "blog-post-ish"
    del doc["authors"]
    assert len(list(cff_validator.iter_errors(doc))) >= 2
