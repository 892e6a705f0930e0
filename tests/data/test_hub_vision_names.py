"""S12 (issue 22): GTSRB and EuroSAT class names are the official code's lists (task_vectors, from the CLIP paper)."""

from __future__ import annotations

from repro.data.hub_vision import EUROSAT_NAMES, GTSRB_NAMES, _gtsrb_names


def test_gtsrb_names_are_the_official_43_by_class_id():
    assert len(GTSRB_NAMES) == 43 == len(set(GTSRB_NAMES)) and _gtsrb_names() == list(GTSRB_NAMES)
    assert GTSRB_NAMES[0] == "red and white circle 20 kph speed limit"
    assert GTSRB_NAMES[6] == "end / de-restriction of 80 kph speed limit"
    assert GTSRB_NAMES[14] == "stop"
    assert GTSRB_NAMES[17] == "red circle with white horizonal stripe no entry"  # the official spelling
    assert GTSRB_NAMES[29] == "red and white triangle with bicyle warning"  # the official spelling
    assert GTSRB_NAMES[40] == "blue circle with white arrows indicating a traffic circle"
    assert GTSRB_NAMES[42] == "white circle with gray strike bar indicating no passing for trucks has ended"


def test_eurosat_names_are_the_official_ones_for_every_folder():
    folders = ["AnnualCrop", "Forest", "HerbaceousVegetation", "Highway", "Industrial", "Pasture", "PermanentCrop",
               "Residential", "River", "SeaLake"]  # torchvision's EuroSAT classes (sorted folder names)
    assert sorted(EUROSAT_NAMES) == folders
    assert [EUROSAT_NAMES[f] for f in folders] == [
        "annual crop land", "forest", "brushland or shrubland", "highway or road",
        "industrial buildings or commercial buildings", "pasture land", "permanent crop land",
        "residential buildings or homes or apartments", "river", "lake or sea"]
