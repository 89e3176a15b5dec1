"""CITATION.cff is valid CFF 1.2.0, checked against the schema shipped by cffconvert."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cff_validator():
    # find the package without importing it: it is installed without its dependencies, for its
    # schema only
    spec = importlib.util.find_spec("cffconvert")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail(
            "cffconvert is not installed; the README's test command installs "
            "it (pip install --no-deps cffconvert)"
        )
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


def test_version_is_single_sourced_and_citation_agrees():
    """xamm_data/VERSION is the one source: packaging reads it, the code reads it, CITATION.cff must
    say it."""
    from importlib.metadata import metadata, version

    from xamm_data import __version__

    source = (REPO / "xamm_data" / "VERSION").read_text().strip()
    doc = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert __version__ == source == str(doc["version"]) == version("xamm")
    meta = metadata("xamm")
    assert meta["License-Expression"] == "BSD-3-Clause" == doc["license"]
    assert "Typing :: Typed" in meta.get_all("Classifier")


def test_packages_are_typed():
    for pkg in ("xamm_data", "xamm_models", "ingest/xamm_ingest"):
        assert (REPO / pkg / "py.typed").is_file()


def test_the_project_names_one_repository_of_its_own():
    """The package's metadata, the citation file and the documentation site's header link point at
    the project's own repository; the paper's repository is the paper's, and named as such."""
    import tomllib

    doc = yaml.safe_load((REPO / "CITATION.cff").read_text())
    urls = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]
    site = yaml.safe_load((REPO / "mkdocs.yml").read_text().replace("!!python", "#"))
    assert urls["Repository"] == doc["repository-code"] == site["repo_url"]
    assert "generalizable_modeling" not in site["repo_url"]
    assert urls["Paper"] == doc["preferred-citation"]["repository-code"]
