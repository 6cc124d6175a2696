"""The README's set-up commands are the ones CI runs and the CLI accepts."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_ci_runs_the_readme_test_command_verbatim():
    readme_blocks = bash_blocks((ROOT / "README.md").read_text())
    test_command = readme_blocks[1].strip()
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci_lines
    assert "pytest" in test_command and ".[test]" in test_command


def test_readme_opens_with_install_and_run():
    first = bash_blocks((ROOT / "README.md").read_text())[0].strip()
    assert first.startswith("pip install") and first.endswith("lvu run")


def test_one_install_covers_run_report_and_view():
    """The first command's install is the whole main job: plots and the viewer are core dependencies;
    the old extras stay as empty aliases so `pip install 'lvu[web]'` still works."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {re.split(r"[<>=!~\[; ]", dep)[0] for dep in project["dependencies"]}
    assert {"matplotlib", "fastapi", "uvicorn"} <= core
    assert project["optional-dependencies"]["web"] == [] and project["optional-dependencies"]["report"] == []
    readme = (ROOT / "README.md").read_text()
    assert "lvu[web]" not in readme and "lvu[report]" not in readme and ".[ocr,web]" not in readme


def test_readme_links_plugins_and_getting_the_benchmarks():
    readme = (ROOT / "README.md").read_text()
    assert "(docs/plugins.md)" in readme and (ROOT / "docs" / "plugins.md").exists()
    section = readme.split("### Getting the real benchmarks", 1)[1].split("\n## ", 1)[0]
    for name in ("LongVideoBench", "Video-MME", "MLVU", "LVBench", "Neptune"):
        assert f"| {name} |" in section
    assert section.count("lvu data check ") >= 5
