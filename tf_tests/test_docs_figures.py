"""The documentation's figures: every image a page shows exists, every
command a page shows is one the project has, and `docs/make_figures.py`
draws its figures from run directories in the runs' own formats.

The runs here are small hand-written directories in the formats the
examples write (`results.json`, `checkpoints/latest/progress.json`,
`test_segmented.txt`, the PNGs); the real runs' outputs are what the
script is run on to make `docs/figures/`.
"""

import glob
import importlib.util
import json
import os
import re

import numpy as np
import pytest
from PIL import Image

from doc_pages import doc_pages
from hmkeras.cells.recurrent_recursive_cell import bracketed_tree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where the README's images live when it is read on a package index.
RAW_URL = "https://raw.githubusercontent.com/hmkeras/hmkeras/main/"
REPOSITORY_URL = "https://github.com/hmkeras/hmkeras/blob/main/"
LINK = re.compile(r"\]\(([^)\s]+)\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)")
FENCE = re.compile(r"^```(bash|sh)?\s*$")
SCRIPT = re.compile(r"python3?\s+((?:examples|bench|docs)/[\w/]+\.py)")
FLAG = re.compile(r"--(\w+)")


def pages():
    """The documentation's pages, as absolute paths."""
    return [os.path.join(ROOT, page) for page in doc_pages()]


def load_make_figures():
    spec = importlib.util.spec_from_file_location(
        "make_figures", os.path.join(ROOT, "docs", "make_figures.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def image_path(page, target):
    """The file an image reference of `page` points to."""
    if target.startswith(RAW_URL):
        return os.path.join(ROOT, target[len(RAW_URL):])
    return os.path.normpath(os.path.join(os.path.dirname(page), target))


def shell_commands(page):
    """The commands of the shell blocks of `page`, continuation lines joined."""
    commands, inside, current = [], False, ""
    with open(page, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                inside = not inside and bool(FENCE.match(line))
                continue
            if not inside:
                continue
            current += line.rstrip("\n").rstrip("\\") + " "
            if not line.rstrip().endswith("\\"):
                commands.append(current.split("#")[0].strip())
                current = ""
    return [command for command in commands if command]


@pytest.mark.parametrize("page", pages(), ids=lambda p: os.path.relpath(p, ROOT))
def test_every_image_exists(page):
    with open(page, encoding="utf-8") as f:
        targets = IMAGE.findall(f.read())
    for target in targets:
        assert not target.startswith("http") or target.startswith(RAW_URL), (
            f"{page}: image {target} is neither in the repository nor under {RAW_URL}")
        assert os.path.isfile(image_path(page, target)), f"{page}: {target} does not exist"


def test_the_pages_show_the_figures():
    shown = set()
    for page in pages():
        with open(page, encoding="utf-8") as f:
            shown.update(os.path.basename(t) for t in IMAGE.findall(f.read()))
    committed = {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "docs", "figures", "*.png"))}
    assert committed, "docs/figures holds no figure"
    assert committed <= shown, f"figures no page shows: {sorted(committed - shown)}"
    total = sum(os.path.getsize(p) for p in glob.glob(os.path.join(ROOT, "docs", "figures", "*.png")))
    assert total < 600 * 1024, f"the committed figures take {total / 1024:.0f} kB"


def test_every_command_on_the_pages_is_the_projects():
    parser = load_make_figures().build_parser()
    figure_flags = {action.dest for action in parser._actions}
    checked = 0
    for page in pages():
        for command in shell_commands(page):
            for script in SCRIPT.findall(command):
                assert os.path.isfile(os.path.join(ROOT, script)), f"{page}: {command}"
                checked += 1
                if script == "docs/make_figures.py":
                    unknown = set(FLAG.findall(command)) - figure_flags
                    assert not unknown, f"{page}: make_figures.py has no {sorted(unknown)}"
    assert checked > 20


def test_readme_links_work_on_a_package_index():
    """The README is the package's long description: a link must be
    absolute (or an anchor of the README itself), and one into the
    repository must name a file that exists."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        targets = LINK.findall(f.read())
    assert len(targets) > 30
    for target in targets:
        assert target.startswith(("https://", "http://", "#")), f"relative link {target}"
        for prefix in (REPOSITORY_URL, RAW_URL):
            if target.startswith(prefix):
                path = target[len(prefix):].split("#")[0]
                assert os.path.exists(os.path.join(ROOT, path)), f"{target}: no {path}"


def test_the_published_files_are_there():
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as f:
        assert "Apache License" in f.read(200)
    with open(os.path.join(ROOT, "setup.cfg"), encoding="utf-8") as f:
        setup = f.read()
    assert "license = Apache-2.0" in setup and "license_files = LICENSE" in setup
    with open(os.path.join(ROOT, "CITATION.cff"), encoding="utf-8") as f:
        citation = f.read()
    with open(os.path.join(ROOT, "hmkeras", "__init__.py"), encoding="utf-8") as f:
        version = re.search(r'__version__ = "([^"]+)"', f.read()).group(1)
    assert "cff-version: 1.2.0" in citation and f"version: {version}" in citation
    with open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8") as f:
        assert f"repo_url: {REPOSITORY_URL.split('/blob/')[0]}" in f.read()


def test_shell_commands_joins_continuation_lines(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n```bash\npython a.py --x=1 \\\n    --y=2  # note\n```\n"
                    "```python\npython_code = 1\n```\n")
    assert shell_commands(str(page)) == ["python a.py --x=1      --y=2"]


# --- the drawings -----------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
def test_parse_brackets_reads_bracketed_trees(seed):
    make_figures = load_make_figures()
    rng = np.random.default_rng(seed)
    tokens = "(1+2)*3-4"
    actions = rng.integers(0, 3, size=len(tokens))
    tree = make_figures.parse_brackets(bracketed_tree(tokens, actions))
    leaves, spans = make_figures.tree_spans(tree)
    assert "".join(leaves) == tokens
    for first, last, height in spans:
        assert 0 <= first <= last < len(tokens) and height >= 1


def write_png(path, size=(1800, 400)):
    Image.new("RGB", size, (250, 250, 250)).save(path)


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(value, f)


def progress(epochs, hierarchical):
    records = []
    for epoch in range(1, epochs + 1):
        record = {"bpc": 3.0 / epoch, "val_bpc": 3.1 / epoch}
        if hierarchical:
            record.update(val_z_rate_1=0.3, val_z_rate_2=0.1)
        records.append(record)
    return {"history": records}


@pytest.fixture
def runs(tmp_path):
    char_lm = tmp_path / "quick_hmlstm"
    char_lm.mkdir()
    write_png(char_lm / "segmentation.png")
    discovery = tmp_path / "brent"
    write_json(str(discovery / "results.json"), {"word_discovery": {
        "gold_rate": 0.28,
        "examples": [{"gold": "yu want tu", "found": "yu wa nttu"},
                     {"gold": "lUk", "found": "lUk"}]}})
    write_json(str(discovery / "checkpoints" / "latest" / "progress.json"), progress(3, True))
    write_json(str(discovery / "lstm_baseline" / "checkpoints" / "latest" / "progress.json"),
               progress(3, False))
    (discovery / "lstm_baseline" / "test_segmented.txt").write_text("yu want tu\nl Uk\n")
    write_png(discovery / "surprisal.png", (600, 430))
    write_json(str(discovery / "surprisal.json"), {"png": str(discovery / "surprisal.png")})
    handwriting = tmp_path / "iam_ondb"
    handwriting.mkdir()
    write_png(handwriting / "samples.png")
    write_png(handwriting / "fig5_segments.png")
    mee = tmp_path / "mee"
    write_json(str(mee / "results.json"), {
        "trees": ["[( 1 + 2 )] * 3   = 9 (predicted 9)", "1 + [2 * 3]   = 7 (predicted 5)"],
        "true_trees": ["[( 1 + 2 )] * 3", "1 + [2 * 3]"]})
    return {"char_lm_run": char_lm, "word_discovery_run": discovery,
            "surprisal_json": discovery / "surprisal.json",
            "handwriting_run": handwriting, "mee_run": mee, "mee_reinforce_run": mee}


def test_make_figures_writes_every_figure(runs, tmp_path):
    make_figures = load_make_figures()
    output = tmp_path / "figures"
    argv = [f"--{name}={path}" for name, path in runs.items()] + [f"--output_dir={output}"]
    written = make_figures.make_figures(make_figures.build_parser().parse_args(argv))
    assert sorted(os.path.basename(p) for p in written) == sorted([
        "main-job-segmentation.png", "word-discovery.png", "training-curves.png",
        "surprisal-recovery.png", "handwriting-samples.png", "handwriting-segments.png",
        "rrnet-trees.png", "rrnet-reinforce-trees.png"])
    for path in written:
        with Image.open(path) as image:
            assert image.mode == "P" and image.width <= make_figures.MAX_WIDTH
    with Image.open(output / "main-job-segmentation.png") as image:
        assert image.size == (1400, round(400 * 1400 / 1800))  # scaled, aspect kept


def test_make_figures_needs_a_run(capsys):
    make_figures = load_make_figures()
    with pytest.raises(SystemExit):
        make_figures.parse_args([])
    assert "give at least one run" in capsys.readouterr().err


def test_a_missing_run_file_is_named(tmp_path):
    make_figures = load_make_figures()
    with pytest.raises(FileNotFoundError, match="results.json"):
        make_figures.word_discovery_results(str(tmp_path))
