"""Every repository path the docs name exists: docs/*.md, README.md, and the comments and docstrings of the code.

A moved or deleted file leaves its old path behind in prose nobody runs; readers then look for a file that is not
there. A path is a word starting with one of the repository's top-level folders (`metrics_bridge/agreement/NAME.py`,
`bench/NAME.py`, `templates/...`). It may name a template or static file by its name under templates/ or static/ (as
Django looks them up), a module attribute (`metrics_bridge/exports.agreement_csv`), or several files with a
`*`. Placeholders in capitals (`bench/NAME.py`) are not paths. Paths under ../shared are another repository's.
"""

import ast
import io
import re
import subprocess
import tokenize
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = sorted(
    {
        line.split("/")[0]
        for line in subprocess.run(
            ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.splitlines()
        if "/" in line
    }
)
# Not preceded by a path character: `../shared/docs/NAME.md` is the shared repository's, not docs/NAME.md.
FOLDER = "|".join(re.escape(folder) for folder in FOLDERS)
PATH = re.compile(r"(?<![\w./\-~$])((?:" + FOLDER + r")/[\w.\-/*]*[\w/*])")
PLACEHOLDER = re.compile(r"/[A-Z_]+(?:\.\w+)?(?:/|$)")
LOOKUP_ROOTS = (REPO, REPO / "templates", REPO / "static")


def named_paths_of_markdown(text: str):
    for match in PATH.finditer(text):
        yield text.count("\n", 0, match.start()) + 1, match.group(1)


def prose_of_python(source: str):
    """(line, text) of each comment and docstring: the prose of a module, not its code."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    with warnings.catch_warnings():  # a module's own escape-sequence warnings are not this test's concern
        warnings.simplefilter("ignore")
        tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                yield node.body[0].lineno, docstring


def named_paths_of_python(source: str):
    for line, text in prose_of_python(source):
        for match in PATH.finditer(text):
            yield line + text.count("\n", 0, match.start()), match.group(1)


def exists(path: str) -> bool:
    path = path.rstrip(".")
    if PLACEHOLDER.search(path):
        return True
    for root in LOOKUP_ROOTS:
        if any(root.glob(path)) if "*" in path else (root / path).exists():
            return True
    module = path  # a module attribute: metrics_bridge/exports.agreement_csv
    while "." in module.rsplit("/", 1)[-1]:
        module = module.rsplit(".", 1)[0]
        if (REPO / f"{module}.py").exists():
            return True
    return False


def tracked(*patterns: str) -> list[str]:
    result = subprocess.run(["git", "ls-files", *patterns], cwd=REPO, capture_output=True, text=True, check=True)
    return result.stdout.split()


def missing_paths() -> list[str]:
    missing = []
    for name in tracked("docs/*.md", "README.md", "*.py"):
        file = REPO / name
        if not file.exists():  # deleted in the working tree, not yet committed
            continue
        text = file.read_text(encoding="utf-8")
        named = named_paths_of_python(text) if name.endswith(".py") else named_paths_of_markdown(text)
        missing += [f"{name}:{line}: {path}" for line, path in named if not exists(path)]
    return missing


def test_every_path_the_docs_and_comments_name_exists():
    assert not missing_paths(), "paths named but not in the repository:\n" + "\n".join(missing_paths())


def test_the_check_finds_a_stale_path():
    prose = '"""See metrics_bridge/agreement/no_such_module.py and templates/ratings/no_such_page.html."""\n'
    stale = [path for _line, path in named_paths_of_python(prose) if not exists(path)]
    assert stale == ["metrics_bridge/agreement/no_such_module.py", "templates/ratings/no_such_page.html"]
    named = [path for _line, path in named_paths_of_markdown("`metrics_bridge/agreement/intervals.py`, bench/NAME.py")]
    assert named == ["metrics_bridge/agreement/intervals.py", "bench/NAME.py"]
    assert all(exists(path) for path in named)
