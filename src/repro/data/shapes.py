"""The real sizes of every dataset the paper profile fetches: per stored split, examples per label, in label order.

:data:`DATASET_SHAPES` maps each task to a :class:`Shape`: its family ("text" = P1's tasks, "nlp" = P2's T5 tasks,
"vision" = P2's image tasks), its label names where we write them (else only their count), and the per-label
counts of each split *as the fetched layout stores it* (:mod:`repro.data.layout`; text: ``train`` / ``test`` with
test = the split the paper evaluates on; nlp: the hub splits; vision: :data:`repro.data.hub_vision.FETCHED_SPLITS`).
``exact`` says whether the per-label counts are the published ones (True) or a published total spread over the
labels as the dataset's description allows (False: the total is right, the spread is approximate).  The source of
each number is the comment beside it.  :mod:`repro.data.fixtures` scales these counts down to write fixture
folders shaped like the real data.
"""

from __future__ import annotations

from dataclasses import dataclass

from repro.data.hub_nlp import NLP_SOURCES
from repro.data.tasks import get_spec


@dataclass(frozen=True)
class Shape:
    """One dataset's label names and per-split per-label counts (see the module doc)."""

    family: str  # text | nlp | vision
    splits: dict[str, tuple[int, ...]]
    labels: tuple[str, ...] = ()  # () = generic names, as many as the counts (vision datasets with many classes)
    exact: bool = True
    source: str = ""

    @property
    def num_labels(self) -> int:
        return len(next(iter(self.splits.values())))

    def total(self, split: str) -> int:
        return sum(self.splits[split])


def _even(total: int, n: int) -> tuple[int, ...]:
    """``total`` spread over ``n`` labels as evenly as integers allow (the first labels get the remainder)."""
    return tuple(total // n + (i < total % n) for i in range(n))


def _share(total: int, fractions: tuple[float, ...]) -> tuple[int, ...]:
    """``total`` spread by ``fractions`` (rounded; the last label takes the rounding)."""
    head = [round(total * f) for f in fractions[:-1]]
    return (*head, total - sum(head))


DTD_CLASSES = ("banded", "blotchy", "braided", "bubbly", "bumpy", "chequered", "cobwebbed", "cracked", "crosshatched",
               "crystalline", "dotted", "fibrous", "flecked", "freckled", "frilly", "gauzy", "grid", "grooved",
               "honeycombed", "interlaced", "knitted", "lacelike", "lined", "marbled", "matted", "meshed", "paisley",
               "perforated", "pitted", "pleated", "polka-dotted", "porous", "potholed", "scaly", "smeared",
               "spiralled", "sprinkled", "stained", "stratified", "striped", "studded", "swirly", "veined",
               "waffled", "woven", "wrinkled", "zigzagged")
# torchgeo's RESISC45 class list (its dataset docstring; the archive's folder names, sorted)
RESISC45_CLASSES = ("airplane", "airport", "baseball_diamond", "basketball_court", "beach", "bridge", "chaparral",
                    "church", "circular_farmland", "cloud", "commercial_area", "dense_residential", "desert", "forest",
                    "freeway", "golf_course", "ground_track_field", "harbor", "industrial_area", "intersection",
                    "island", "lake", "meadow", "medium_residential", "mobile_home_park", "mountain", "overpass",
                    "palace", "parking_lot", "railway", "railway_station", "rectangular_farmland", "river",
                    "roundabout", "runway", "sea_ice", "ship", "snowberg", "sparse_residential", "stadium",
                    "storage_tank", "tennis_court", "terrace", "thermal_power_station", "wetland")
# torchvision's EuroSAT folder names (sorted), with the published 27,000 images per class (Helber et al. 2019)
EUROSAT_CLASSES = ("AnnualCrop", "Forest", "HerbaceousVegetation", "Highway", "Industrial", "Pasture",
                   "PermanentCrop", "Residential", "River", "SeaLake")
EUROSAT_COUNTS = (3000, 3000, 3000, 2500, 2500, 2000, 2500, 3000, 2500, 3000)

#: every dataset of the paper profile (text: P1 and the OOD targets; nlp: P2's T5 tasks; vision: P2's image tasks)
DATASET_SHAPES: dict[str, Shape] = {
    # ---- P1 (text: train = the hub train split, test = GLUE dev / the LM-BFF test split, our label order) --------
    # GLUE SST-2 train 67,349 (29,780 negative / 37,569 positive); dev 872 = 428 / 444 (../shared/data PROVENANCE)
    "SST-2": Shape("text", {"train": (29780, 37569), "test": (428, 444)}, source="GLUE sst2 (HF card); dev counts: "
                   "shared/data PROVENANCE"),
    # LM-BFF MR: 10,662 sentences (5,331 per class), 2,000 test, 8,662 train (spec F: MR 2,000 test); spread evenly
    "MR": Shape("text", {"train": (4331, 4331), "test": (1000, 1000)}, exact=False, source="LM-BFF MR sizes (spec "
                "Part F); per class from the balanced 5,331 / 5,331 corpus"),
    # CR: LM-BFF train ~1,775 of which ~367 negative (shared/data PROVENANCE: the 512-shot union covers 1,771 rows),
    # test 2,000 (spec F) = the rest of the corpus' 1,367 negative / 2,406 positive sentences
    "CR": Shape("text", {"train": (369, 1406), "test": (998, 1002)}, exact=False,
                source="shared/data PROVENANCE (LM-BFF CR train), spec Part F (2,000 test)"),
    # MPQA: 10,606 phrases (3,316 positive), 2,000 test (spec F), 8,606 train; spread by the corpus ratio
    "MPQA": Shape("text", {"train": (5916, 2690), "test": (1375, 625)}, exact=False,
                  source="SentEval MPQA totals, spec Part F (2,000 test)"),
    # Subj: 10,000 sentences, 5,000 per class; SetFit/subj 8,000 train / 2,000 test
    "Subj": Shape("text", {"train": (4000, 4000), "test": (1000, 1000)}, exact=False,
                  source="Pang & Lee 2004 (5,000 / 5,000), spec Part F (2,000 test)"),
    # TREC coarse, our order DESC ENTY ABBR HUM LOC NUM: train_5500 (5,452), TREC_10 (500); shared/data PROVENANCE
    # lists the same counts less 11 train questions that repeat test ones
    "TREC": Shape("text", {"train": (1162, 1250, 86, 1223, 835, 896), "test": (138, 94, 9, 65, 81, 113)},
                  source="Li & Roth 2002 train_5500 / TREC_10; shared/data PROVENANCE"),
    # AG News: 120,000 train / 7,600 test, 30,000 / 1,900 per class (Zhang et al. 2015)
    "AGNews": Shape("text", {"train": (30000,) * 4, "test": (1900,) * 4}, source="Zhang et al. 2015"),
    # GLUE QNLI train 104,743 (balanced); dev 5,463 = 2,702 / 2,761 (shared/data PROVENANCE)
    "QNLI": Shape("text", {"train": (52366, 52377), "test": (2702, 2761)}, exact=False,
                  source="GLUE qnli (HF card); dev counts: shared/data PROVENANCE"),
    # SNLI train 550,152 less 785 without a gold label; test = the validation split (LM-BFF's 9,842-row file; HF
    # stanfordnlp/snli validation, label -1 dropped: 9,842), as repro.data.loaders reads it (review S11)
    "SNLI": Shape("text", {"train": (183416, 182764, 183187), "test": (3329, 3235, 3278)},
                  source="Bowman et al. 2015 / HF stanfordnlp/snli card"),
    # GLUE MNLI train 392,702; validation_matched 9,815 (HF nyu-mll/glue card)
    "MNLI": Shape("text", {"train": (130899, 130900, 130903), "test": (3479, 3123, 3213)},
                  source="GLUE mnli (HF card)"),
    # GLUE RTE train 2,490 (1,249 / 1,241); dev 277 = 146 / 131 (shared/data PROVENANCE)
    "RTE": Shape("text", {"train": (1249, 1241), "test": (146, 131)}, source="GLUE rte; shared/data PROVENANCE"),
    # GLUE MRPC train 3,668 (1,194 not_equivalent); dev 408 = 129 / 279 (shared/data PROVENANCE)
    "MRPC": Shape("text", {"train": (1194, 2474), "test": (129, 279)}, source="GLUE mrpc; shared/data PROVENANCE"),
    # GLUE QQP train 363,846; dev 40,430 (spec Part F)
    "QQP": Shape("text", {"train": (229468, 134378), "test": (25545, 14885)}, source="GLUE qqp (HF card), spec F"),
    # OOD targets, test only (fetched without train): IMDb 25,000 test, Yelp polarity 38,000 test, balanced
    "IMDb": Shape("text", {"test": (12500, 12500)}, source="Maas et al. 2011"),
    "Yelp": Shape("text", {"test": (19000, 19000)}, source="Zhang et al. 2015"),
    # ---- P2 NLP (T5; hub split names; StoryCloze: validation = training pool, test = held out) ----------------
    # totals: HF dataset cards; labels roughly balanced except wiki_qa (about 5 % "yes") and paws (44 % "yes")
    "qasc": Shape("nlp", {"train": _even(8134, 8), "validation": _even(926, 8)}, exact=False,
                  source="allenai/qasc card"),
    "wiki_qa": Shape("nlp", {"train": _share(20360, (0.949, 0.051)), "validation": _share(2733, (0.949, 0.051))},
                     exact=False, source="microsoft/wiki_qa card"),
    "quartz": Shape("nlp", {"train": _even(2696, 2), "validation": _even(384, 2)}, exact=False,
                    source="allenai/quartz card"),
    "paws": Shape("nlp", {"train": _share(49401, (0.56, 0.44)), "validation": _share(8000, (0.56, 0.44))},
                  exact=False, source="google-research-datasets/paws labeled_final card"),
    "story_cloze": Shape("nlp", {"validation": _even(1871, 2), "test": _even(1871, 2)}, exact=False,
                         source="Mostafazadeh et al. 2016 (Spring 2016 val / test)"),
    "winogrande": Shape("nlp", {"train": _even(40398, 2), "validation": _even(1267, 2)}, exact=False,
                        source="allenai/winogrande winogrande_xl card"),
    "wsc": Shape("nlp", {"train": _share(554, (0.53, 0.47)), "validation": _share(104, (0.63, 0.37))}, exact=False,
                 source="SuperGLUE wsc.fixed card"),
    "rte": Shape("nlp", {"train": (1249, 1241), "validation": (146, 131)}, source="SuperGLUE rte (= GLUE RTE)"),
    # ---- P2 vision (the stored source splits) --------------------------------------------------------------
    # MNIST digits 0-9 (LeCun et al.; torchvision)
    "MNIST": Shape("vision", {"train": (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),
                              "test": (980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009)},
                   labels=tuple(str(i) for i in range(10)), source="MNIST"),
    # SVHN cropped digits (torchvision maps the label 10 of digit 0 to 0)
    "SVHN": Shape("vision", {"train": (4948, 13861, 10585, 8497, 7458, 6882, 5727, 5595, 5045, 4659),
                             "test": (1744, 5099, 4149, 2882, 2523, 2384, 1977, 2019, 1660, 1595)},
                  labels=tuple(str(i) for i in range(10)), source="Netzer et al. 2011"),
    # GTSRB: torchvision's 26,640 train / 12,630 test, 43 classes (about 150-1,500 train images each)
    "GTSRB": Shape("vision", {"train": _even(26640, 43), "test": _even(12630, 43)}, exact=False,
                   labels=tuple(str(i) for i in range(43)), source="torchvision GTSRB sizes"),
    # Stanford Cars: 196 classes, 8,144 train / 8,041 test (Krause et al. 2013)
    "Cars": Shape("vision", {"train": _even(8144, 196), "test": _even(8041, 196)}, exact=False,
                  source="Krause et al. 2013"),
    # DTD split 1: 40 train / 40 val / 40 test images per class (Cimpoi et al. 2014)
    "DTD": Shape("vision", {"train": (40,) * 47, "val": (40,) * 47, "test": (40,) * 47}, labels=DTD_CLASSES,
                 source="Cimpoi et al. 2014"),
    # EuroSAT: 27,000 images in one split (torchvision), per class as published
    "EuroSAT": Shape("vision", {"all": EUROSAT_COUNTS}, labels=EUROSAT_CLASSES, source="Helber et al. 2019"),
    # RESISC45: 700 images per class; torchgeo's split files 18,900 / 6,300 / 6,300 (60 / 20 / 20)
    "RESISC45": Shape("vision", {"train": (420,) * 45, "val": (140,) * 45, "test": (140,) * 45}, exact=False,
                      labels=RESISC45_CLASSES, source="Cheng et al. 2017; torchgeo split files (Neumann et al. 2019)"),
    # SUN397: torchvision's one split, 108,754 images over 397 classes (at least 100 each)
    "SUN397": Shape("vision", {"all": _even(108754, 397)}, exact=False, source="Xiao et al. 2010; torchvision"),
    # ImageNet: val = 5,000 train images drawn at fetch (seed 0, about 5 per class), test = the official val set
    "ImageNet": Shape("vision", {"val": _even(5000, 1000), "test": (50,) * 1000}, exact=False,
                      source="ILSVRC-2012 val (50 per class); our 5,000-image ImageNetVal"),
}


def label_names(task: str) -> tuple[str, ...]:
    """The label names a fixture of ``task`` writes to ``LABELS.json`` (the real ones where :data:`DATASET_SHAPES`
    or the task registry has them, else generic names)."""
    shape = DATASET_SHAPES[task]
    if shape.labels:
        return shape.labels
    if shape.family == "text":
        return get_spec(task).labels
    if shape.family == "nlp":
        return NLP_SOURCES[task].answers
    if task == "ImageNet":
        return tuple(f"n{i:08d}" for i in range(shape.num_labels))  # wnid-shaped
    return tuple(f"{task.lower()}_class_{i}" for i in range(shape.num_labels))
