"""The wheel as users get it: build it, install it into a fresh virtual environment and use it from there.

The dependencies already installed for the interpreter running the tests are reused (no network for them)
through a ``.pth`` file in the new venv naming that interpreter's site-packages: a machine's Python and a
virtualenv alike (``--system-site-packages`` would see only the base interpreter's packages, which a
virtualenv's are not). The wheel itself goes in with ``--no-deps --ignore-installed``; the venv's own
site-packages comes first on ``sys.path``, so its copy shadows the development install. The build runs without build isolation when this interpreter already has what
``[build-system] requires`` asks for, else pip fetches those into an isolated build environment.
Everything runs from a scratch directory, never from the repository (which would shadow the package).
"""
from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import venv
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: What a source distribution of the project holds (pyproject's package-dir: cli -> esdedup_cli,
#: mappings -> esdedup.mappings).
SOURCE_ITEMS = ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "esdedup", "cli", "mappings")
SAMPLE = [
    {"id": "a1", "title": "通关", "text": "台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续更加便利。"
                                      "有关部门表示，这一措施将覆盖所有口岸，旅客只需出示有效证件即可。"},
    {"id": "a2", "title": "通关（转载）", "text": "台湾居民明日起持台胞证可通关，无需另行申请签注，出入境手续更加便利。"
                                           "有关部门表示，这一措施将覆盖所有口岸，旅客只需出示有效证件即可！"},
    {"id": "b1", "title": "天气", "text": "今天北京天气晴朗，最高气温二十五度，空气质量优良，适合户外活动。"
                                      "气象台提醒市民注意防晒，傍晚前后有短时阵风。"},
]
ENV_DROP = ("ESDEDUP_ES_URL", "ESDEDUP_ES_API_KEY", "ESDEDUP_ES_USER", "ESDEDUP_ES_PASSWORD",
            "ESDEDUP_ES_CA_CERTS", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, encoding="utf-8",
                          timeout=timeout)
    assert proc.returncode == 0, (f"{' '.join(map(str, cmd))} exited {proc.returncode}\n"
                                  f"--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}")
    return proc


def _build_requirements_met() -> bool:
    """Whether this interpreter already has every ``[build-system] requires`` (then no isolation)."""
    try:
        import tomllib  # Python 3.11+
        from packaging.requirements import Requirement
    except ImportError:
        return False
    requires = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["build-system"]["requires"]
    for spec in requires:
        req = Requirement(spec)
        try:
            installed = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            return False
        if not req.specifier.contains(installed, prereleases=True):
            return False
    return True


class Installed:
    def __init__(self, root: Path, venv_dir: Path, wheel: Path, env: dict[str, str]) -> None:
        self.root, self.venv, self.wheel, self.env = root, venv_dir, wheel, env
        bindir = venv_dir / ("Scripts" if os.name == "nt" else "bin")
        self.python = bindir / ("python.exe" if os.name == "nt" else "python")
        self.esdedup = bindir / ("esdedup.exe" if os.name == "nt" else "esdedup")
        self.work = root / "work"

    def run(self, *args: str | Path, timeout: float = 180) -> subprocess.CompletedProcess:
        return _run([str(a) for a in args], cwd=self.work, env=self.env, timeout=timeout)

    def py(self, code: str) -> str:
        return self.run(self.python, "-c", code).stdout


def _reuse_site_packages(inst: Installed) -> None:
    """Make this interpreter's installed packages importable in the venv, after the venv's own: plain path
    lines in a ``.pth`` file (their own ``.pth`` files, such as the editable install's hook, are not run)."""
    dirs = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    purelib = Path(inst.run(inst.python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
                   .stdout.strip())
    (purelib / "_esdedup_test_reuse.pth").write_text("".join(f"{d}\n" for d in dirs if Path(d).is_dir()),
                                                   "utf-8")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
    src, dist, work = root / "src", root / "dist", root / "work"
    src.mkdir()
    work.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "*.sqlite*")
    for item in SOURCE_ITEMS:
        path = REPO / item
        if path.is_dir():
            shutil.copytree(path, src / item, ignore=ignore)
        elif path.exists():
            shutil.copy2(path, src / item)

    env = {k: v for k, v in os.environ.items() if k not in ENV_DROP}
    env.update({"ESDEDUP_CONFIG": str(root / "no-config.json"), "ESDEDUP_DATA_DIR": str(root / "data"),
                "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"})

    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(dist), str(src)]
    if _build_requirements_met():
        build.insert(4, "--no-build-isolation")
    _run(build, cwd=root, env=env, timeout=300)
    (wheel,) = dist.glob("esdedup-*.whl")

    venv_dir = root / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(venv_dir)
    inst = Installed(root, venv_dir, wheel, env)
    _reuse_site_packages(inst)
    # pip comes from this interpreter's site-packages; it installs into the venv (its sys.prefix).
    inst.run(inst.python, "-m", "pip", "install", "--no-deps", "--ignore-installed", "--no-index", "--quiet",
             str(wheel), timeout=300)
    return inst


def test_the_venv_imports_the_installed_copy(installed: Installed) -> None:
    out = installed.py("import esdedup, esdedup_cli, sys; print(esdedup.__file__); print(esdedup_cli.__file__); "
                       "print(sys.prefix)")
    pkg, cli, prefix = out.splitlines()
    venv_dir = installed.venv.resolve()
    assert Path(prefix).resolve() == venv_dir
    assert Path(pkg).resolve().is_relative_to(venv_dir), pkg
    assert Path(cli).resolve().is_relative_to(venv_dir), cli


def test_wheel_holds_every_module_and_data_file(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    expected = {f"esdedup/{p.relative_to(REPO / 'esdedup').as_posix()}" for p in (REPO / "esdedup").rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    expected |= {f"esdedup_cli/{p.name}" for p in (REPO / "cli").glob("*.py")}
    expected |= {f"esdedup/mappings/{p.name}" for p in (REPO / "mappings").iterdir()
                 if p.is_file() and p.suffix in (".json", ".py")}
    assert "esdedup/mappings/esdedup-template.json" in expected
    assert "esdedup/py.typed" in expected
    missing = sorted(expected - names)
    assert not missing, f"not in the wheel: {missing}"
    meta = zipfile.ZipFile(installed.wheel).read(
        next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "esdedup = esdedup_cli.start:run" in meta


def test_installed_resources(installed: Installed) -> None:
    code = """
import json
from importlib import resources
from esdedup.schema import shipped_template
template = resources.files("esdedup.mappings").joinpath("esdedup-template.json")
data = resources.files("esdedup.data")
print(json.dumps({
    "template": template.is_file(),
    "template_patterns": json.loads(template.read_text("utf-8"))["index_patterns"],
    "shipped": shipped_template() == json.loads(template.read_text("utf-8")),
    "data": sorted(p.name for p in data.iterdir() if p.is_file() and not p.name.endswith((".py", ".pyc"))),
    "stopwords_zh": len(data.joinpath("stopwords_zh.txt").read_text("utf-8").split()),
    "py_typed": resources.files("esdedup").joinpath("py.typed").is_file(),
    "where": str(resources.files("esdedup")),
}))
"""
    got = json.loads(installed.py(code))
    assert got["template"] and got["shipped"] and got["py_typed"]
    assert got["template_patterns"] == ["esdedup-*"]
    repo_data = sorted(p.name for p in (REPO / "esdedup" / "data").iterdir()
                       if p.is_file() and p.suffix not in (".py", ".pyc"))
    assert got["data"] == repo_data
    assert {"stopwords_zh.txt", "stopwords_en.txt", "synonyms_example.dict"} <= set(got["data"])
    assert got["stopwords_zh"] > 10
    assert Path(got["where"]).resolve().is_relative_to(installed.venv.resolve())


def test_cli_entry_points(installed: Installed) -> None:
    help_text = installed.run(installed.esdedup, "--help").stdout
    assert "Usage:" in help_text
    for command in ("ingest", "similar", "dups", "mapping", "info", "compare", "kibana"):
        assert command in help_text, command
    version = metadata.version("esdedup")  # the development install: same version as the wheel
    assert installed.wheel.name.startswith(f"esdedup-{version}-")
    assert installed.run(installed.esdedup, "--version").stdout.strip() == f"esdedup {version}"
    module_help = installed.run(installed.python, "-m", "esdedup", "--help").stdout
    assert "Usage:" in module_help and "ingest" in module_help


def test_ingest_and_look_up_with_the_installed_cli(installed: Installed) -> None:
    data_dir = installed.root / "store"
    sample = installed.work / "sample.jsonl"
    sample.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in SAMPLE), "utf-8")
    out = installed.run(installed.esdedup, "ingest", sample, "--index", "t", "--data-dir", data_dir).stdout
    assert "read 3 = indexed 3" in out and "failed 0" in out
    assert (data_dir / "t.sqlite").is_file()

    info = json.loads(installed.run(installed.esdedup, "info", "--index", "t", "--data-dir", data_dir,
                                    "--json").stdout)
    assert info["documents"] == 3
    similar = json.loads(installed.run(installed.esdedup, "similar", "--index", "t", "--data-dir", data_dir,
                                       "--id", "a1", "--json").stdout)
    assert [m["id"] for m in similar["matches"]] == ["a2"]

    ndjson = installed.run(installed.esdedup, "kibana", "export", "--index", "t", "--data-dir", data_dir).stdout
    assert [json.loads(line)["type"] for line in ndjson.splitlines()][:2] == ["index-pattern", "search"]


def test_public_names_import_from_the_installed_package(installed: Installed) -> None:
    code = """
import esdedup.search.paging  # imports the esdedup.search.diversify module first: must not shadow the function
from esdedup import (diversify, Fingerprinter, Fingerprint, FingerprintConfig, hamming, BandLayout,
                     open_store, search_diversified)
import esdedup
assert callable(diversify) and diversify.__module__ == "esdedup.search.diversify", diversify
hits = [{"_id": "a", "_source": {"dedup": {"simhash": "00000000000000ff"}}},
        {"_id": "b", "_source": {"dedup": {"simhash": "00000000000000fe"}}}]
print([h["_id"] for h in diversify(hits)])
print(sorted(esdedup.__all__))
"""
    kept, names = installed.py(code).splitlines()
    assert kept == "['a']"
    assert "diversify" in names and "BandLayout" in names


def test_the_installed_package_uses_the_native_core_beside_it(installed: Installed) -> None:
    """The installed esdedup takes the extension installed beside it (CI installs the wheel it builds of native/
    into its fresh virtualenvs, and sets ESDEDUP_REQUIRE_NATIVE=1): the same answer as the development
    install here, and with the variable set, the core in use."""
    from esdedup.util import native

    there = installed.py("from esdedup.util import native; print(native.enabled(), native.unavailable_reason())")
    assert there.split(" ", 1)[0] == str(native.enabled()), there
    if os.environ.get("ESDEDUP_REQUIRE_NATIVE") == "1":
        assert there.startswith("True"), there
