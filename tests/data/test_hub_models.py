"""Saved models keep huggingface_hub's ``ModelHubMixin`` contract without loading the Hub client:
``config.json`` holds the constructor's arguments and is read back; a folder whose ``config.json``
is not an object of them is refused naming the file; reading a saved model loads no Hub client."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from xamm_data.hub.files import MANIFEST
from xamm_data.hub.models import CONFIG_NAME, VerifiedHubMixin
from xamm_data.store.files import CorruptDataError


class Toy(VerifiedHubMixin, library_name="xamm", tags=["toy"]):
    def __init__(self, width: int = 3, name: str = "toy", weights: object = None):
        self.width, self.name = width, name

    def _save_pretrained(self, save_directory):
        (save_directory / "toy.json").write_text(json.dumps({"saved": True}))

    @classmethod
    def _from_pretrained(cls, *, model_id, **kwargs):
        return cls(**kwargs)


def test_config_holds_the_constructors_arguments_and_is_read_back(tmp_path):
    Toy(5, weights=object()).save_pretrained(tmp_path / "m")
    assert json.loads((tmp_path / "m" / CONFIG_NAME).read_text()) == {
        "name": "toy",
        "width": 5,
        "weights": None,  # the default, JSON-able; the object passed is not
    }
    back = Toy.from_pretrained(tmp_path / "m")
    assert (back.width, back.name) == (5, "toy") and back._hub_config["width"] == 5
    assert Toy.from_pretrained(tmp_path / "m", width=7).width == 7  # a given argument wins
    assert (tmp_path / "m" / MANIFEST).is_file() and Toy._hub_card["tags"] == ["toy"]


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '"width"', "\xff"])
def test_a_config_that_is_not_an_object_is_refused_naming_it(tmp_path, text):
    Toy().save_pretrained(tmp_path / "m")
    (tmp_path / "m" / CONFIG_NAME).write_bytes(text.encode("latin-1"))
    with pytest.raises(CorruptDataError, match=f"{CONFIG_NAME}: .*expected"):
        Toy.from_pretrained(tmp_path / "m")


def test_reading_the_default_predictor_loads_no_hub_client():
    code = (
        "import sys\nfrom xamm_models.zoo import load_model\nload_model('xamm/default')\n"
        "print('huggingface_hub' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stderr[-2000:]
