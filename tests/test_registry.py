"""The one registry pattern, and the registries built on it."""

from __future__ import annotations

import pytest

from xamm_data.registry import Registry, UnknownNameError


def test_register_get_list_and_did_you_mean():
    reg: Registry = Registry("widget")

    @reg.register("blue-widget", colour="blue")
    def blue():
        return "b"

    reg.add("red-widget", "r", aliases=("Crimson",))
    assert reg.get("blue-widget") is blue and blue.registry_info == {"colour": "blue"}
    assert reg.get("crimson") == "r" and "CRIMSON" in reg and "green" not in reg
    assert reg.list() == ["blue-widget", "red-widget"] and reg.list("r*") == ["red-widget"] and len(reg) == 2
    with pytest.raises(UnknownNameError) as e:
        reg.get("blue-widgte")
    assert e.value.suggestion == "blue-widget"
    assert str(e.value) == "unknown widget 'blue-widgte'. Did you mean 'blue-widget'? Known: blue-widget, red-widget"
    with pytest.raises(ValueError, match="registered twice"):
        reg.add("red-widget", "again")


@pytest.mark.parametrize("lookup,bad,expected", [
    ("machines", "lasen", "lassen"),
    ("embedders", "atention", "attention"),
    ("regressors", "catbost", "catboost"),
    ("formats", "rajaperff", "rajaperf"),
])
def test_every_registry_uses_the_pattern(lookup, bad, expected):
    if lookup == "machines":
        from xamm_data import machines as m
        reg = m.REGISTRY
    elif lookup == "embedders":
        pytest.importorskip("torch")
        from xamm_models import embedders as m
        reg = m.REGISTRY
    elif lookup == "regressors":
        from xamm_models import regressors as m
        reg = m.REGISTRY
    else:
        import xamm_ingest.dispatch  # noqa: F401  (registers the formats)
        from xamm_ingest import formats as m
        reg = m.FORMATS
    assert isinstance(reg, Registry)
    with pytest.raises(UnknownNameError) as e:
        reg.get(bad)
    assert e.value.suggestion == expected and expected in e.value.known
