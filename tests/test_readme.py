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
