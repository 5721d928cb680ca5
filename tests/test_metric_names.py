"""A metric owns its meaning (metrics.py): code elsewhere names a metric through metrics.TIME, COUNT or
DEFAULT (or the constant of its own name: metrics.STACK, SIM, ...), or asks the registered `Metric` (its ratio, unit, verdict words), never by comparing with the
metric's name written out. Like the op-name test (test_families), this reads every string literal of
src/pqsimd outside metrics.py and data/: a registered metric's name used as a metric (compared, a
`metric=` argument, a default, a constant) is a finding. A column that happens to share a metric's
name (mix_ops' `instructions`) is a column, not a metric, and is not looked at; a line that means
something else by the word (a perf event called instructions) says so with `# not a metric`."""

from __future__ import annotations

import ast
from pathlib import Path

from pqsimd import metrics

SRC = Path(metrics.__file__).parent
OWNERS = {SRC / "metrics.py"}
NOT_A_METRIC = "# not a metric"


def _names(node) -> list[ast.Constant]:
    """The string constants of an expression that is a name or a collection of names."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def metric_literals(tree: ast.AST) -> list[ast.Constant]:
    """String constants in the places a metric is named: compared (==, !=, in), a `metric=` keyword, the
    default of a parameter, of a `.get(key, default)` or of a dataclass field, a module or class constant,
    an argument of unit()/unit_of()."""
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = (node.left, *node.comparators)
            # a name compared is one; a collection only where a metric is tested against it (a tuple of
            # column names is columns)
            about_metric = any("metric" in ast.unparse(s) for s in sides)
            for side in sides:
                found += _names(side) if about_metric or isinstance(side, ast.Constant) else []
        elif isinstance(node, ast.Call):
            found += [c for k in node.keywords if k.arg in ("metric", "metrics") for c in _names(k.value)]
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name == "get" and len(node.args) == 2:
                found += _names(node.args[1])
            if name in ("unit", "unit_of", "get_metric") and node.args:
                found += _names(node.args[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in (*node.args.defaults, *node.args.kw_defaults):
                if d is not None:
                    found += _names(d)
        elif isinstance(node, (ast.Module, ast.ClassDef)):
            for st in node.body:
                if isinstance(st, (ast.Assign, ast.AnnAssign)) and isinstance(st.value, ast.Constant):
                    found += _names(st.value)
    return found


def test_no_metric_name_outside_the_registry():
    names = set(metrics.names())
    hits = []
    for path in sorted(SRC.rglob("*.py")):
        if path in OWNERS or "data" in path.relative_to(SRC).parts:
            continue
        text = path.read_text()
        lines = text.splitlines()
        for c in metric_literals(ast.parse(text)):
            if c.value in names and NOT_A_METRIC not in lines[c.lineno - 1]:
                hits.append(f"{path.relative_to(SRC)}:{c.lineno}: {c.value!r}")
    assert not hits, ("metric names outside metrics.py (use metrics.TIME/COUNT/DEFAULT or ask the Metric):\n"
                      + "\n".join(sorted(set(hits))))


def test_the_test_finds_a_metric_compared_by_name():
    tree = ast.parse('x = m == "ticks"\ny = d.get("metric", "instructions")\ndef f(metric="stack"): pass\n'
                     'z = g(metric="size")\nC = "ticks"\ncols = ["ticks", "op"]\n')
    assert sorted(c.value for c in metric_literals(tree)) == ["instructions", "size", "stack", "ticks", "ticks"]


def test_metric_help_and_docs_lists_come_from_the_registry():
    from pqsimd import cli

    option = next(p for p in cli.run.params if p.name == "metric")
    assert metrics.help_list() in " ".join(option.help.split())
    for m in metrics.REGISTRY.values():
        assert m.name in metrics.help_list()


def test_the_readmes_synopsis_lists_the_registered_metrics():
    import re

    readme = (SRC.parents[1] / "docs" / "commands.md").read_text()  # the synopsis, linked from the README
    listed = re.search(r"\[--metric ([a-z,]+)\]", readme).group(1).split(",")
    assert listed == metrics.names()
